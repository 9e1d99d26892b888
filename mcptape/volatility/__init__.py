"""Volatility: what changes from run to run without being drift, and how to hold it still.

    normalize.py        volatile values -> placeholders, racing notifications in a canonical order
    nondeterminism.py   what differs between N runs of one session, and the rules that make it stable
    latency.py          latency of two live sides compared, a regression only beyond the base's noise

Pure: tapes and samples in, plain data out.
"""
