"""Reports: the verdict data model (model.py) and its renderings (terminal, markdown, JSON, JUnit)."""
