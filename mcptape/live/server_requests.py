"""What the server asks the scripted client, and the answers mcptape.yml scripts for it.

Owns every answer the client gives: a server-initiated request (roots/list, ping, sampling,
elicitation; anything else -32601), 2026-07-28's input-required round trips (the request sent again
with `inputResponses` and the echoed `requestState`, under the same step, until the result is
complete) and 2025-11-25's -32042 URL elicitations (the request sent again when every URL is
accepted). Which of a scripted conversation's answers a request gets is config/answers.py's; the
wire (sending, waiting, recording) is live/wire.py's.
"""

from __future__ import annotations

import time
from typing import Any

from mcptape.config.answers import NoAnswer, Script
from mcptape.config.models import ClientSettings
from mcptape.errors import ConfigError, ServerError
from mcptape.live.wire import Wire
from mcptape.tape.events import note_event

SAMPLING_DECLINED = -1  # the spec's "user rejected sampling request"
URL_ELICITATION_REQUIRED = -32042  # 2025-11-25: visit these URLs (data.elicitations), then ask again
MAX_INPUT_ROUNDS = 10  # a server that keeps asking must not hang the gate
STATE_ONLY_WAIT = 0.05  # an input_required result with only requestState: retry after this pause


class ServerRequests:
    """The session's answers to the server's questions (module docstring), in the order they are used."""

    def __init__(self, wire: Wire, settings: ClientSettings) -> None:
        self.wire = wire
        self.settings = settings
        self._scripts = {method: Script(method, given) for method, given in
                         (("sampling/createMessage", settings.sampling), ("elicitation/create", settings.elicitation))}

    def scripted(self, method: str, params: Any) -> Any:
        """The scripted answer to one server request (config/answers.py); none fitting is the config's error."""
        try:
            return self._scripts[method].answer(params)
        except NoAnswer as e:
            raise ConfigError(f"{self.wire.where()}: {e}",
                              hint=f"add an answer to `client.{method.split('/')[0]}` in mcptape.yml, in order "
                              "or with `when:`/`contains:` that this request holds") from e

    def answer(self, msg: dict[str, Any]) -> None:
        """Answer a request the server sent (the wire hands it over as it arrives)."""
        method = msg.get("method")
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg.get("id")}
        if method == "roots/list":
            reply["result"] = {"roots": list(self.settings.roots)}
        elif method == "ping":
            reply["result"] = {}
        elif method == "sampling/createMessage":
            chosen = self.scripted(method, msg.get("params"))
            if isinstance(chosen, dict):
                reply["result"] = chosen
            else:
                reply["error"] = {
                    "code": SAMPLING_DECLINED,
                    "message": "sampling declined by mcptape (set `client.sampling` in mcptape.yml to answer)",
                }
        elif method == "elicitation/create":
            chosen = self.scripted(method, msg.get("params"))
            reply["result"] = chosen if isinstance(chosen, dict) else {"action": "decline"}
        else:
            reply["error"] = {"code": -32601, "message": f"Method not found: {method}"}
        self.wire.send(reply)

    def input_response(self, req: Any) -> dict[str, Any] | None:
        """The canned answer to one embedded request, as for the legacy server-initiated request; None: none."""
        method = req.get("method") if isinstance(req, dict) else None
        if method == "roots/list":
            return {"roots": list(self.settings.roots)}
        if method in self._scripts:
            chosen = self.scripted(str(method), req.get("params"))
            if isinstance(chosen, dict):
                return chosen
            if method == "elicitation/create":
                return {"action": "decline"}
        return None

    # -- input-required round trips (2026-07-28) ------------------------------------------------

    def input_rounds(self, method: str, params: dict[str, Any] | None, answer: dict[str, Any]) -> dict[str, Any]:
        """Answer `input_required` results from the config and retry until the result is complete."""
        for _ in range(MAX_INPUT_ROUNDS):
            result = answer.get("result")
            if not (isinstance(result, dict) and result.get("resultType") == "input_required"):
                return answer
            asked = result.get("inputRequests")
            responses: dict[str, Any] = {}
            for key, req in (asked.items() if isinstance(asked, dict) else ()):
                reply = self.input_response(req)
                if reply is None:
                    what = req.get("method") if isinstance(req, dict) else req
                    self.wire.record(note_event(
                        "input_required",
                        f"{method}: not answered: the server asks {what}, which mcptape.yml gives no answer for "
                        "(set `client.sampling`)",
                    ))
                    return answer
                responses[key] = reply
            retry = {k: v for k, v in (params or {}).items() if k not in ("inputResponses", "requestState")}
            if responses:
                retry["inputResponses"] = responses
            elif "requestState" in result:
                time.sleep(STATE_ONLY_WAIT)  # the server is working; asking again at once would spin
            if "requestState" in result:
                retry["requestState"] = result["requestState"]
            answer = self.wire.request_once(method, retry)
        raise ServerError(
            f"{self.wire.where()}: the server still answered input_required after {MAX_INPUT_ROUNDS} rounds",
            hint="the server never completes this request with the answers mcptape.yml gives (client.elicitation, "
            "client.sampling, client.roots)",
        )

    def url_elicitations(self, method: str, params: dict[str, Any] | None, answer: dict[str, Any]) -> dict[str, Any]:
        """-32042 URLElicitationRequired (2025-11-25): the server needs the user to visit URLs
        first. Each listed elicitation is answered from `client.elicitation` as an
        `elicitation/create` of mode url would be; when every one is accepted (the user went
        there), the request is sent again, under the same step; else the error is the answer."""
        for _ in range(MAX_INPUT_ROUNDS):
            error = answer.get("error")
            data = error.get("data") if isinstance(error, dict) and error.get("code") == URL_ELICITATION_REQUIRED else None
            asked = data.get("elicitations") if isinstance(data, dict) else None
            if not isinstance(asked, list) or not asked:
                return answer
            for elicitation in asked:
                chosen = self.scripted("elicitation/create", elicitation)
                if not (isinstance(chosen, dict) and chosen.get("action") == "accept"):
                    self.wire.record(note_event("url_elicitation", f"{method}: the server asks the user to visit "
                                                f"{len(asked)} URL(s); mcptape.yml's client.elicitation does not accept "
                                                "them, so the request is not sent again"))
                    return answer
            answer = self.wire.request_once(method, params)
        return answer
