"""``gpucost-lab``, the course's tools on the command line: :mod:`.main` assembles the commands and runs one;
each group module (:mod:`.memory`, :mod:`.pricing`, :mod:`.timeline`, :mod:`.release`, :mod:`.grading`,
:mod:`.export`, :mod:`.pipeline`) lists its commands as :class:`~.command.Command` records, and :mod:`.errors` reports
bad input and every other failure in one line.
"""
