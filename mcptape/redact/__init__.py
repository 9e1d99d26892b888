"""Secret redaction: what counts as a secret, how it is replaced, and the check that nothing survived.

Owns what counts as a secret and how it is replaced: tapes (events, header, footer), reports,
terminal and markdown text and error messages all go through a `Redactor`, then `verify`
scans the finished output again and raises `SecretLeak` (exit 4) if anything survived.
It leaves *where* output goes to the writers (record/, ci.py, publish/github.py, report/): they call
`redact_*`/`guard`, then `verify` on the exact bytes, and write nothing when it raises.

Detectors, in the order they win on overlapping text:

1. Known values (`known`: source name -> value): the secrets among what the config hands a
   server, or rec's command line and environment, chosen by one rule (`secret_reason`, in the
   last section: by name, shape, entropy, header, or because the user marks them; `MODE:
   result` is configuration, not a secret). Found in every form we can predict: raw,
   URL-encoded (quote / quote_plus, upper and lower hex), JSON-escaped (plain and `\\uXXXX`),
   HTML/XML-escaped, and base64 (standard and urlsafe) at all three byte alignments, so a value
   embedded in a longer blob such as `Basic base64(user:value)` is found without decoding.
   Named after their source: `<REDACTED:env.CALC_TOKEN>`. Values that cannot be told from
   ordinary text are skipped (see `_ignorable_known`): shorter than 6 characters,
   booleans/null, plain numbers, values the user allows, credential-free paths and URLs, and
   values inside mcptape's own text (`own_text`: JSON keys, method names, report words), which
   config/secrets.py refuses outright.
2. Token shapes of common providers, from two independent sources: betterleaks' default rule set
   (rules.py: the gitleaks rules and more, 460+ provider shapes, run in Go; its `generic-*`
   keyword rules are left out, 3. covers them), and our own (`SHAPES`), which win where both
   match (they cut finer). Ours: GitHub classic and fine-grained, OpenAI,
   Anthropic, AWS access key ids (and a 40-char secret key near one), Slack tokens and
   webhooks, Google API keys, Stripe secret/restricted keys and webhook secrets (publishable
   `pk_` keys are public by design and stay), GitLab, npm, PyPI, Hugging Face, Azure storage
   `AccountKey=`/`SharedAccessKey=`, Twilio `SK...`, SendGrid `SG.x.y`, Discord bot tokens,
   DigitalOcean `do?_v1_`, Databricks `dapi...`, Alibaba `LTAI...`, Azure AD client secrets
   (`xxx8Q~...`), a standalone 40-character AWS secret key (between value delimiters, random;
   not in a decoded run cut out of a longer base64 one), JWTs, whole PEM private key blocks (also as
   escaped JSON text, a GCP service-account key, and when printed line by line on stderr),
   `Authorization: Bearer|Basic` values, and `user:pass@` in URLs (postgres, mysql, mongodb,
   redis, any scheme).
3. Secret-named fields (`name_class`). Whether a name is a secret's is ONE table in shapes.py,
   read as words (`secret_name`: `DB_PASS`, `signingKey`, `seed_phrase`, `otp`; not
   `PUBLIC_KEY`, `TOKEN_URL`, `author`), the same for what a server writes and for what mcptape
   hands it (policy.py). Under such a name a value is a secret when it looks like one: for
   `password`, `pass`, `pwd`, `secret`, `mnemonic`, ... no spaces and a digit, symbol or mixed
   case, or 12+ letters, or 8+ varied ones, or a 12-24 word seed phrase (`looks_secret`); for
   `token`, `api_key`, `*_key`, `session_id`, ... 8+ characters, no spaces, 3.0+ bits of
   entropy a character; for `otp`, `pin`, `cvv` also 4-12 digits. Prose (`Best regards, Ada`,
   `required`, `The token budget is 4096`) and code references (`process.env.API_KEY`) are not.
   The same rule covers JSON keys, `key=value` and `key: value` in text (the words it starts
   from are derived from the table), URL query strings and `--flag value` pairs in argv lists.
   `progressToken` and friends (MCP protocol fields, not credentials) are excluded.
4. User patterns (`redact.patterns`), kind `pattern`.
5. Who recorded: the home directory becomes `<HOME>` (only as a whole path component), the user
   name becomes `<USER>` as a whole word, case-insensitively, unless it is shorter than 4
   characters or a common account/word name (`COMMON_USER_NAMES`: root, runner, ci, admin,
   ...), which would over-redact ordinary text and identifies nobody.

Decoding (on by default; `decode=False` exists for the benchmark): after the direct pass, runs
of base64 alphabet (24+ chars, mixed case) that decode to mostly printable UTF-8, percent-encoded
runs and JSON `\\uXXXX`-escaped runs are decoded and scanned again, two levels deep. A secret
inside a base64 blob replaces the whole blob; inside percent/`\\u` runs only the secret is
replaced and the rest re-encoded. Allowlisted and never redacted: our own placeholders (also as
XML, HTML and JSON escape them: `&lt;REDACTED:x&gt;` is no URL password), `${{ secrets.X }}`,
`$VAR`/`${VAR}` references and the exact values in `allow`.

Placeholders are `<REDACTED:kind#tag>`. The tag is not an ordinal (removing one secret would
renumber every later one into false drift) but the first 32 bits of HMAC-SHA256 of the value,
keyed with a fixed project constant plus an optional `salt`. The key is public, so the tag is
only given to values whose estimated entropy (length x Shannon bits/char) is at least 64 bits:
then 2**32 or more candidate values share each tag, so it confirms no guess and cannot be
reversed. Lower-entropy values (a `password: hunter22`) get no tag at all, never an unkeyed or
brute-forceable hash; known values need none (their source names them). The same secret gets
the same placeholder in every tape and run; a rotated token gets a new tag, so comparisons
should treat tags as identities within a tape (placeholders.py: `PLACEHOLDER_RE`, `strip_tags`).

The rule set's library is loaded on first use, never before rec forks its writer (a Go
runtime does not survive a fork: rec checks its header with our detectors, the writer checks it
again with the rules), and only handed text with a token-length run (rules.py).

Speed: Python's regex engine crawls on a many-branch alternation, so each detector starts with
a lowercase literal (its trigger); `str.find` locates triggers and the combined regex is only
matched, anchored, there. The few shapes without a literal prefix (Twilio, Discord) are tried
only where a base64-alphabet run starts with one of their first characters (`Shape.run_first`). A whole tape line is first put to `Engine.could_match`, a superset
test (no trigger in its lowercase, plain or JSON-escaped; no encoded run; no user patterns
configured, since a pattern may be anchored to a field's value): a line it clears is not walked
at all, by the scrubber nor by `verify`. Short clean strings (JSON keys) are cached.

Fail closed: redaction and verification use two separately built detector engines, each with
our detectors and the rule set, so a scrubber that misses a kind (a bug, or a fault injected in
a test: tests/redact/test_rules.py takes the rule set from the scrubber) is still caught by
`verify`, whose messages name the place and kind, never the value.

Modules:
    shapes.py     what a secret looks like: provider token shapes, THE secret names table, thresholds
    rules.py      betterleaks' default rule set as a detector (spans of what it finds)
    detectors.py  the compiled detectors: scanning text, decoding, walking JSON (two per Redactor)
    redactor.py   Redactor: scrub events, objects and text; verify finished output (SecretLeak, exit 4)
    policy.py     which values mcptape hands a server are secrets (`secret_reason`, argv, env)
    own_text.py   mcptape's own words, which no known secret may be
"""
