"""``python -m gpucost_lab`` is the ``gpucost-lab`` command."""

import sys

from .cli import main

sys.exit(main())
