"""Feed the device (chapter 07): the seeded image pipeline and its loader settings (:mod:`.loader`), the bounds of a
run (:mod:`.bounds`), settings compared one change at a time (:mod:`.compare`) and launch overhead against
``torch.compile`` (:mod:`.launch_overhead`). Import each name from its module.
"""
