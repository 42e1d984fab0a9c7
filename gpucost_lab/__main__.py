"""``python -m gpucost_lab`` is the ``gpucost-lab`` command."""

import sys

from gpucost_lab.cli.main import main

sys.exit(main())
