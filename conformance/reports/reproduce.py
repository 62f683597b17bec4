"""What a failure shows: the answer a target gave, as text, and shell commands that send a case's requests
again, one per step (a MessagePack answer saved to `step-N.bin`, with a way to read it)."""

import base64
import json
import shlex
from typing import NamedTuple

import msgpack

from ..language.decoding import decode, from_msgpack, one_at_a_time
from .results import printable


class Exchange(NamedTuple):
    """One step of a server case as it happened: what was sent, and the answer's bytes."""

    request: bytes
    method: str
    path: str
    media_type: str
    answer: bytes
    framing: str | None = None  # how the body's end was told, if not by its Content-Length


# Read with the python3 of the PATH (with msgpack, as in the environment the suite runs in), never this interpreter's
# own path, so that a reproduction runs on another machine; bytes are shown in base64, not as Python writes them.
READ_BINARY = ("python3 -c \"import base64, json, msgpack, sys; print(json.dumps(msgpack.unpackb(open(sys.argv[1], "
               "'rb').read(), strict_map_key=False), default=lambda b: base64.b64encode(b).decode()))\" {file}")


def reproduce(target, exchanges, names=None):
    """Shell commands that send a server case's requests again, one per step (Exchange); a MessagePack
    request is shown as the message it holds, its keys named where `names` ({id: name}) knows them."""
    commands, scheme = [], "https" if target.tls else "http"
    for number, (data, method, path, media_type, answer, framing) in enumerate(exchanges, 1):
        absolute = path.startswith(("http://", "https://"))  # (the request target in absolute form)
        url = shlex.quote(f"{scheme}://{target.host}:{target.port}{'' if absolute else path}")
        url += f" --request-target {shlex.quote(path)}" if absolute else ""
        if method != "POST":
            commands.append(f"curl -s -i -X {method} {url}")
            continue
        try:
            text = data.decode() if data[:1] != b"\x92" else None
        except UnicodeDecodeError:
            text = None
        send = (f"--data-binary {shlex.quote(text)}" if text is not None
                else "--data-binary @-")
        pipe = "" if text is not None else f"echo {base64.b64encode(data).decode()} | base64 -d | "
        framed = {"chunked": " -H 'Transfer-Encoding: chunked'", "none": " -H 'Content-Length:'",
                  "both": f" -H 'Transfer-Encoding: chunked' -H 'Content-Length: {len(data)}'",
                  "two-lengths": f" -H 'Content-Length: {len(data)}' -H 'Content-Length: {len(data) - 1}'",
                  "length-not-a-number": f" -H 'Content-Length: 0x{len(data):x}'",
                  "blank-before-colon": " -H 'X-Probe : 1'",
                  "length-behind-a-cr": f" -H $'X-Probe: 1\\rContent-Length: {len(data)}' -H 'Content-Length:'",
                  }.get(framing, "")
        command = f"{pipe}curl -s -i -X POST {url} -H 'Content-Type: {media_type}'{framed} {send}"
        if text is None:  # (base64 says nothing to a reader: the message it holds, keys as the ids sent)
            commands.append(f"# step {number} sends MessagePack: {_readable(data, names)}")
        if answer[:1] == b"\x92":  # MessagePack: headers on the terminal, the answer to a file
            if not any(line.startswith("# reading") for line in commands):
                commands.append("# reading a MessagePack answer takes Python's msgpack (pip install msgpack)")
            file = f"step-{number}.bin"
            command = command.replace("curl -s -i", "curl -s -D -") + f" -o {file}; {READ_BINARY.format(file=file)}"
        commands.append(command)
    return commands


def _readable(data, names=None, most=300):
    """MessagePack bytes as the suite's notation (language/decoding.py), keys named by `names`, or what they
    are if they hold no message."""
    try:
        text = json.dumps(from_msgpack(msgpack.unpackb(data, strict_map_key=False), names), ensure_ascii=False)
    except (ValueError, msgpack.UnpackException, RecursionError):
        return f"{len(data)} bytes that are not MessagePack"
    return printable(text if len(text) <= most else text[:most] + " ...")


def shown(answer, encodings):
    """An answer as text to show: its message as JSON (MessagePack decoded), else its bytes; printable. An
    encoding it carries (@enc_, a name for each of the schema's words) is told by its size, so that what
    follows it shows."""
    with one_at_a_time(answer):
        message = decode(answer, encodings)
        if type(message) is list and message and type(message[0]) is dict and type(message[0].get("@enc_")) is dict:
            message = [{**message[0], "@enc_": f"(an encoding of {len(message[0]['@enc_'])} names, not shown)"},
                       *message[1:]]
        text = json.dumps(message, ensure_ascii=False) if message is not None else answer.decode(errors="replace")
    return cut(text)


def cut(text, most=2000):
    """`text` to show, printable, and cut after `most` characters, saying how many more there were."""
    return printable(text if len(text) <= most else text[:most] + f" ... ({len(text) - most} characters more)")
