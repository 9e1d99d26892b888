"""mcptape.yml: what the file may say, reading it with file:line errors, and its JSON Schema.

    models.py       the pydantic models of the file (servers, sessions, steps, normalize, redact, drift)
    load.py         load_config: read, interpolate, validate -> LoadedConfig (lines and secrets included)
    yaml_lines.py   YAML read with the line of every value, aliases and nesting bounded
    interpolate.py  ${VAR} and ${VAR:-default}
    translate.py    pydantic's errors as one `file:line: field: what is wrong; the fix` paragraph
    secrets.py      which values the config hands a server are secrets (redact's rule, applied here)
    locations.py    locations in the file and how a value or field reads in a message
    json_schema.py  the JSON Schema editors use (`mcptape schema`)

pydantic and yaml are imported here and nowhere on the path of `mcptape --version`/`play`.
"""
