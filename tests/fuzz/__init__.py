"""The fuzz suite: hostile tapes, configs and servers through real mcptape processes (campaign.py)."""
