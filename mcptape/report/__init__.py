"""Reports: the renderings of a verdict (verdict/model.py) — terminal, markdown, JSON, JUnit, SARIF. They only render."""
