"""The tape: what crossed the wire, as a versioned, reviewable file.

    events.py   what crossed the wire, as self-contained event dicts (one EventBuilder for every producer)
    format.py   the bytes of a tape: header, footer, serialization, streamed and whole-tape writing
    seal.py     the SHA-256 seals a tape carries (footer, rec's seal lines) and checking them
    reader.py   reading tapes: whole, in pairs (diff) and streamed (play), one set of checks and errors
    atomic.py   all-or-nothing file writes (golden tapes, reports)
    view.py     the review view written beside each golden tape: one line per value, for reading diffs
"""
