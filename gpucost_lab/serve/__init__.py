"""Serving under load (chapter 08): a small seeded model served over HTTP by N instances, load from MLPerf LoadGen
(and a closed-loop client, to show coordinated omission), percentiles with intervals, the queueing model, right-sizing
and the price of a million requests. Import each name from its module.
"""
