"""``gpucost-lab``, the course's tools on the command line: :mod:`.main` assembles the commands, :mod:`.errors` reports
bad input in one line, and each other module holds one group of commands.
"""
