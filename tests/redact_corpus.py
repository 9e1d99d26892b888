"""Planted secrets for the redaction tests, generated at test time (no real-looking token is committed).

Each `Planted` is one secret shape: `carrier` is the text that holds it (as a server would print
it), `values` are the parts that must never appear in any output, in any encoding. `forms(...)`
lists every encoding under which a value might leak, for grepping outputs.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, quote_plus

ALNUM = string.ascii_letters + string.digits
KNOWN_SOURCE = "env.CALC_TOKEN"
USER_PATTERN = "ACME-[A-Z0-9]{24}"


@dataclass(frozen=True)
class Planted:
    kind: str  # the kind we expect in placeholders / counts
    carrier: str
    values: tuple[str, ...]


def _r(n: int, alphabet: str = ALNUM, rng: random.Random | None = None) -> str:
    rng = rng or random.Random()
    # Make sure a digit and a capital appear (where the alphabet has them), so the rules for real
    # tokens see one: `Bearer` wants a digit, the entropy rules mixed classes.
    classes = [cls for cls in (string.digits, string.ascii_uppercase) if any(c in alphabet for c in cls)]
    while True:
        s = "".join(rng.choice(alphabet) for _ in range(n))
        if n < 8 or all(any(c in cls for c in s) for cls in classes):
            return s


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def corpus(seed: int | None = None) -> list[Planted]:
    """At least 20 secret shapes, fresh random characters each time (seeded for reproducible runs)."""
    rng = random.Random(seed)

    def r(n: int, alphabet: str = ALNUM) -> str:
        return _r(n, alphabet, rng)

    upper_num = string.ascii_uppercase + string.digits
    b64 = string.ascii_letters + string.digits + "+/"
    url = ALNUM + "-_"
    jwt = (
        _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        + "."
        + _b64url(json.dumps({"sub": r(12), "iat": rng.randint(10**9, 2 * 10**9)}).encode())
        + "."
        + r(43, url)
    )
    pem_body = [r(64, b64) for _ in range(4)] + [r(20, b64) + "=="]
    pem = "-----BEGIN " + "RSA PRIVATE KEY-----\n" + "\n".join(pem_body) + "\n-----END RSA " + "PRIVATE KEY-----"
    aws_id = "AK" + "IA" + r(16, upper_num)
    aws_secret = r(40, ALNUM + "/+")
    while not (any(c.isupper() for c in aws_secret) and any(c.islower() for c in aws_secret)):
        aws_secret = r(40, ALNUM + "/+")
    pw = r(14)
    known = r(10) + "-" + r(10, url)
    hex_ = "0123456789abcdef"
    # A GCP service-account key file as a tool prints it: JSON text, the key's newlines escaped.
    gcp_body = [r(64, b64) for _ in range(6)] + [r(24, b64) + "=="]
    gcp_key = "-----BEGIN " + "PRIVATE KEY-----\n" + "\n".join(gcp_body) + "\n-----END " + "PRIVATE KEY-----\n"
    gcp = json.dumps(
        {"type": "service_account", "project_id": "demo-project", "private_key_id": r(40, hex_), "private_key": gcp_key,
         "client_email": "svc@demo-project.iam.gserviceaccount.com", "client_id": str(rng.randint(10**20, 10**21))}
    )
    sts_id = "AS" + "IA" + r(16, upper_num)
    named_aws = r(40, ALNUM + "/+")
    azure_key = base64.b64encode(rng.randbytes(64)).decode()
    sas_key = base64.b64encode(rng.randbytes(32)).decode()
    discord = _b64url(str(rng.randint(10**17, 10**18 - 1)).encode()) + "." + r(6, url) + "." + r(38, url)
    basic_pw = r(16)
    basic = base64.b64encode(f"svc-user:{basic_pw}".encode()).decode()
    at_pw1, at_pw2 = r(8), r(8)
    items = [
        Planted("github-token", "token " + "gh" + "p_" + (v := r(36)), ("ghp_" + v,)),
        Planted("github-token", "oauth " + "gh" + "o_" + (v := r(36)), ("gho_" + v,)),
        Planted("github-token", "app " + "gh" + "s_" + (v := r(36)), ("ghs_" + v,)),
        Planted("github-pat", "pat " + "github" + "_pat_" + (v := r(22) + "_" + r(59)), ("github_pat_" + v,)),
        Planted("openai-key", "key " + "s" + "k-" + (v := r(48)), ("sk-" + v,)),
        Planted("openai-key", "key " + "s" + "k-proj-" + (v := r(56, url)), ("sk-proj-" + v,)),
        Planted("anthropic-key", "key " + "s" + "k-ant-api03-" + (v := r(93, url)), ("sk-ant-api03-" + v,)),
        Planted("aws-access-key-id", "id " + aws_id, (aws_id,)),
        Planted("aws-secret-key", f"aws {aws_id} secret {aws_secret}", (aws_id, aws_secret)),
        Planted("slack-token", "slack " + "xo" + "xb-" + (v := f"{rng.randint(10**10, 10**11)}-{r(24)}"), ("xoxb-" + v,)),
        Planted("slack-token", "slack " + "xa" + "pp-1-" + (v := f"A{r(10, upper_num)}-{r(30)}"), ("xapp-1-" + v,)),
        Planted(
            "slack-webhook",
            "hook https://hooks.slack.com/services/" + (v := f"T{r(8, upper_num)}/B{r(8, upper_num)}/{r(24)}"),
            (v,),
        ),
        Planted("google-api-key", "gkey " + "AI" + "za" + (v := r(35, url)), ("AIza" + v,)),
        Planted("stripe-key", "stripe " + "sk" + "_live_" + (v := r(24)), ("sk_live_" + v,)),
        Planted("stripe-key", "stripe " + "rk" + "_test_" + (v := r(24)), ("rk_test_" + v,)),
        Planted("stripe-webhook-secret", "hook " + "wh" + "sec_" + (v := r(32)), ("whsec_" + v,)),
        Planted("gitlab-token", "gitlab " + "gl" + "pat-" + (v := r(20, url)), ("glpat-" + v,)),
        Planted("npm-token", "npm " + "np" + "m_" + (v := r(36)), ("npm_" + v,)),
        Planted("pypi-token", "pypi " + "py" + "pi-AgEIcHlwaS5vcmc" + (v := r(70, url)), ("pypi-AgEIcHlwaS5vcmc" + v,)),
        Planted("huggingface-token", "hf " + "h" + "f_" + (v := r(34)), ("hf_" + v,)),
        Planted("jwt", "jwt " + jwt, (jwt,)),
        Planted("private-key", pem, tuple(pem_body)),
        Planted("bearer-token", "Authorization: Bearer " + (v := r(40, url + ".")), (v,)),
        Planted("url-password", f"db postgres://app:{pw}@db.internal:5432/x", (pw,)),
        # A raw `@` in the password: the secret runs to the authority's last `@`, as drivers read it.
        Planted("url-password", f"db mysql://app:{at_pw1}@{at_pw2}@db.internal:3306/x", (f"{at_pw1}@{at_pw2}", at_pw2)),
        Planted("url-password", "mongo mongodb+srv://app:" + (v := r(20)) + "@cluster0.example.net/db?retryWrites=true", (v,)),
        Planted("url-password", "cache redis://:" + (v := r(18)) + "@cache.internal:6379/0", (v,)),
        Planted("private-key", gcp, tuple(gcp_body)),
        Planted("secret-access-key", "[default]\naws_secret_access_key = " + named_aws, (named_aws,)),
        Planted("secret-access-key", '{"Credentials": {"SecretAccessKey": "' + (v := r(40, ALNUM + "/+")) + '"}}', (v,)),
        Planted("aws-secret-key", f"sts {sts_id} {named_aws[::-1]}", (sts_id, named_aws[::-1])),
        Planted(
            "azure-storage-key",
            f"DefaultEndpointsProtocol=https;AccountName=demo;AccountKey={azure_key};EndpointSuffix=core.windows.net",
            (azure_key,),
        ),
        Planted(
            "azure-storage-key",
            "Endpoint=sb://demo.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
            f"SharedAccessKey={sas_key}",
            (sas_key,),
        ),
        Planted("twilio-api-key", "twilio " + "S" + "K" + (v := r(32, hex_)), ("SK" + v,)),
        Planted("sendgrid-api-key", "mail " + "S" + "G." + (v := r(22, url) + "." + r(43, url)), ("SG." + v,)),
        Planted("discord-bot-token", "Authorization: " + "Bot " + discord, (discord,)),
        Planted("digitalocean-token", "do " + "do" + "p_v1_" + (v := r(64, hex_)), ("dop_v1_" + v,)),
        Planted("databricks-token", "dbx " + "da" + "pi" + (v := r(32, hex_)), ("dapi" + v,)),
        # Basic credentials outside an Authorization header: only the basic-auth detector finds them.
        Planted("basic-auth", "upstream X-Upstream-Auth: " + "Basic " + basic, (basic, basic_pw)),
        Planted("access-token", "callback ?access" + "_token=" + (v := r(32)) + "&page=2", (v,)),
        Planted("password", '{"pass' + 'word": "' + (v := r(9, string.ascii_lowercase) + "1") + '"}', (v,)),
        Planted("alibaba-access-key-id", "ali " + "LT" + "AI" + (v := r(20)), ("LTAI" + v,)),
        Planted("azure-ad-client-secret", "client secret: " + (v := r(3) + "8" + "Q~" + r(34, ALNUM + "_~.-")), (v,)),
        Planted("aws-secret-key", "standalone " + (v := r(38, ALNUM + "/+") + "7a"), (v,)),
        Planted(KNOWN_SOURCE, "conf " + known, (known,)),
        Planted("pattern", "acme " + "ACME-" + (v := r(24, upper_num)), ("ACME-" + v,)),
        *structure_corpus(seed),
    ]
    return items


# The first words of BIP-39's English list: a wallet's seed phrase is twelve of them.
BIP39_WORDS = """abandon ability able about above absent absorb abstract absurd abuse access accident account accuse achieve
    acid acoustic acquire across act action actor actress actual adapt add addict address"""


def _guid(rng: random.Random) -> str:
    hex_ = "0123456789abcdef"
    return "-".join("".join(rng.choice(hex_) for _ in range(n)) for n in (8, 4, 4, 4, 12))


def key_body(rng: random.Random, kind: str = "pkcs8") -> list[str]:
    """A private key's base64 body as PEM prints it (64 characters a line), without its armour:
    the DER header a real key of `kind` starts with (what says it is a private key), random after."""
    head = {
        "pkcs8": "308204bd020100300d06092a864886f70d0101010500048204a7308204a30201000282010100",  # RSA 2048, PKCS#8
        "rsa": "308204a40201000282010100",  # RSA 2048, PKCS#1
        "ec": "30770201010420",  # P-256, SEC1
    }[kind]
    size = {"pkcs8": 1217, "rsa": 1192, "ec": 121}[kind]
    der = bytes.fromhex(head) + rng.randbytes(size - len(head) // 2)
    text = base64.b64encode(der).decode()
    return [text[i : i + 64] for i in range(0, len(text), 64)]


def structure_corpus(seed: int | None = None) -> list[Planted]:
    """Issue 38's families: secrets found by where they are (a header's value whatever its scheme,
    a URL's user name, a webhook's documented path, a `.netrc` password, a `.env` assignment, a
    private key's body without its armour, names of one-time codes and answers) and the two shapes
    the rule set reports only with their context. Fresh characters each seed."""
    rng = random.Random(None if seed is None else seed + 38)

    def r(n: int, alphabet: str = ALNUM) -> str:
        return _r(n, alphabet, rng)

    hex_ = "0123456789abcdef"
    url = ALNUM + "-_"
    django = string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)"
    while True:  # a Django key holds punctuation that once cut it: make sure this one does
        django_key = "django-insecure-" + r(50, django)
        if any(c in django_key[16:] for c in "&(),"):
            break
    teams = f"{_guid(rng)}@{_guid(rng)}/IncomingWebhook/{r(32, hex_)}/{_guid(rng)}"
    words = BIP39_WORDS.split()
    mnemonic = " ".join(rng.choice(words) for _ in range(12))
    body = key_body(rng)
    return [
        Planted("teams-webhook", f"notify https://contoso-ops.webhook.office.com/webhookb2/{teams}", (teams,)),
        Planted("teams-webhook", "legacy https://outlook.office.com/webhook/" + (v := f"{_guid(rng)}@{_guid(rng)}/IncomingWebhook/{r(32, hex_)}/{_guid(rng)}"), (v,)),
        Planted("discord-webhook", "hook https://discord.com/api/webhooks/" + (v := f"{rng.randint(10**17, 10**18)}/{r(68, url)}"), (v,)),
        Planted("authorization", "Authorization: ApiKey " + (v := r(36)), (v,)),
        Planted("authorization", "GET /api/v1/users\nAuthorization: SSWS 00" + (v := r(40, url)), (v,)),
        Planted("authorization", "Proxy-Authorization: Negotiate YIIG" + (v := r(60, ALNUM + "+/")), (v,)),
        Planted("netrc-password", "machine api.example.com\n  login deploy\n  password " + (v := r(22)), (v,)),
        Planted("url-user-token", "git clone https://" + (v := r(40)) + "@github.com/acme/app.git", (v,)),
        Planted("secret-key-base", "RAILS_ENV=production\nSECRET_KEY_BASE=" + (v := r(128, hex_)) + "\nPORT=3000", (v,)),
        Planted("secret-key", f"DEBUG=False\nSECRET_KEY='{django_key}'\nALLOWED_HOSTS=*", (django_key, django_key[16:])),
        Planted("private-key", "\n".join(body), tuple(body)),
        Planted("one-time-code", json.dumps({"one_time_code": (v := str(rng.randint(100000, 999999)))}), (v,)),
        Planted("recovery-codes", json.dumps({"recovery_codes": [a := f"{r(5, hex_)}-{r(5, hex_)}", b := f"{r(5, hex_)}-{r(5, hex_)}"]}), (a, b)),
        Planted("session-id", json.dumps({"sessionId": (v := r(32))}), (v,)),
        Planted("authorization-code", "https://app.example.com/cb?authorization_code=" + (v := r(22)) + "&state=xyz", (v,)),
        Planted("code-verifier", json.dumps({"code_verifier": (v := r(43, url))}), (v,)),
        Planted("passphrase", json.dumps({"passphrase": (v := "-".join(rng.choice(words) for _ in range(4)) + "-7")}), (v,)),
        Planted("security-answer", json.dumps({"security_answer": (v := f"{rng.choice(words).title()} the {rng.choice(words)}")}), (v,)),
        Planted("mnemonic", json.dumps({"mnemonic": mnemonic}), (mnemonic,)),
        Planted("artifactory-api-key", "jfrog " + "AK" + "Cp" + (v := r(69)), ("AKCp" + v,)),
        Planted("artifactory-reference-token", "jfrog " + "cmVmdGtu" + (v := r(56)), ("cmVmdGtu" + v,)),
        Planted("flyio-access-token", "fly " + "fo" + "1_" + (v := r(43, url)), ("fo1_" + v,)),
    ]


def forms(value: str) -> set[str]:
    """Every encoding under which `value` (or a telling part of it) could leak into output."""
    out = {value}
    raw = value.encode()
    out |= {quote(value, safe=""), quote_plus(value), json.dumps(value)[1:-1]}
    out.add("".join(f"\\u{ord(c):04x}" for c in value))
    for k in range(3):  # base64 at every alignment, std and urlsafe: the characters fixed by the value
        enc = base64.b64encode(b"\0" * k + raw).decode()
        core = enc[-(-8 * k // 6) : (8 * (k + len(raw))) // 6]
        if len(core) >= 12:
            out |= {core, core.replace("+", "-").replace("/", "_")}
    # A middle slice: a partial leak is a leak.
    if len(value) >= 24:
        mid = len(value) // 2
        out.add(value[mid - 8 : mid + 8])
    return out


def leaks(output: str, planted: list[Planted]) -> list[str]:
    """Descriptions (never the values) of planted secrets found in `output`, in any form."""
    found = []
    for p in planted:
        for v in p.values:
            for f in forms(v):
                if f in output:
                    found.append(f"{p.kind}: a form of length {len(f)}")
                    break
    return found


def rule_corpus(seed: int | None = None) -> list[Planted]:
    """Provider shapes from gitleaks' default rules that only the maintained rule set (redact/rules.py)
    knows, each named by its rule id: the shapes the issue found leaking (fresh characters per seed)."""
    rng = random.Random(seed)

    def r(n: int, alphabet: str = ALNUM) -> str:
        return _r(n, alphabet, rng)

    hex_ = "0123456789abcdef"
    age = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
    shapes: list[tuple[str, str | Callable[[], str]]] = [
        ("linear-api-key", "lin_" + "api_" + r(40)),
        ("notion-api-token", "ntn_" + r(11, string.digits) + r(35)),
        # The rule set passes over ~2% of random values of this shape (its own filters): a value is
        # drawn until the rule set knows it, since what is planted must be what only it knows.
        ("vault-service-token", lambda: "hvs." + r(90)),
        ("vault-batch-token", "hvb." + r(138)),
        ("heroku-api-key-v2", "HRKU-" + "AA" + r(58)),
        ("shopify-access-token", "shpat_" + r(32, hex_)),
        ("shopify-shared-secret", "shpss_" + r(32, hex_)),
        ("perplexity-api-key", "pplx-" + r(48)),
        ("postman-api-token", "PMAK-" + r(24, hex_) + "-" + r(34, hex_)),
        ("pulumi-api-token", "pul-" + r(40, hex_)),
        ("grafana-cloud-api-token", "glc_" + r(40)),
        ("grafana-service-account-token", "glsa_" + r(32) + "_" + r(8, hex_)),
        ("doppler-api-token", "dp.pt." + r(43)),
        ("age-secret-key", "AGE-SECRET-" + "KEY-1" + r(58, age)),
        ("dockerhub-personal-access-token", "dckr_" + "pat_" + r(27)),
        ("sentry-user-token", "sntryu_" + r(64, hex_)),
        ("figma-personal-access-token", "figd_" + r(40)),
        ("rubygems-api-token", "rubygems_" + r(48, hex_)),
        ("square-access-token", "EAAA" + r(60)),
        ("hashicorp-tf-api-token", r(14) + ".atlasv1." + r(67)),
        ("cloudflare-origin-ca-key", "v1.0-" + r(24, hex_) + "-" + r(146, hex_)),
    ]
    planted = []
    for kind, make in shapes:
        value = make() if callable(make) else make
        if callable(make):
            import betterleaks

            for _ in range(50):
                if betterleaks.scan_string(value):
                    break
                value = make()
        planted.append(Planted(kind, f"here it is: {value} (keep it safe)", (value,)))
    return planted


def false_positive_corpus(seed: int | None = None) -> list[str]:
    """Texts that hold no secret: ids, digests, images, versions, prose under secret-like names."""
    import hashlib
    import uuid

    rng = random.Random(seed)
    blob = bytes(rng.randrange(256) for _ in range(3000))
    digest = hashlib.sha512(blob).digest()
    return [
        "commit " + hashlib.sha1(blob).hexdigest() + " (HEAD -> main)",
        json.dumps({"id": str(uuid.UUID(int=rng.getrandbits(128))), "request_id": str(uuid.UUID(int=rng.getrandbits(128)))}),
        json.dumps({"integrity": "sha512-" + base64.b64encode(digest).decode(), "resolved": "https://registry.npmjs.org/x/-/x-1.0.0.tgz"}),
        json.dumps({"type": "image", "mimeType": "image/png", "data": base64.b64encode(blob).decode()}),
        json.dumps({"sha256": hashlib.sha256(blob).hexdigest(), "md5": hashlib.md5(blob).hexdigest()}),
        json.dumps({"version": "1.2.3-rc.4+build.567", "node": "v20.11.1", "python": "3.12.4"}),
        json.dumps({"signature": "Best regards, Ada", "credentials": "stored in the vault"}),
        json.dumps({"token": "The token budget is 4096", "password": "required", "secret": "not set"}),
        json.dumps({"passphrase": "see the team wiki", "session_key": "rotates daily at noon", "pin": "unset"}),
        json.dumps({"env": {"LOG_LEVEL": "debug", "REGION": "eu-west-1", "MODE": "result", "WORKERS": "4"}}),
        'function e(t){return t.replace(/%[0-9a-f]{2}/g,"\\u0041")};var apiKey=process.env.API_KEY;',
    ]
