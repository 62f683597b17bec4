"""Files a user hands the suite: pyproject.toml, a manifest, known failures, cases of their own, reports
of runs. Each is read only if it is a regular file (not a pipe or a device, which might never end) of at
most MAX_FILE bytes of UTF-8, and parsed within bounds; anything else is a ValueError saying what, in one
line, which the commands print as a usage error. (The reference's tools read theirs the same way; the
suite imports nothing of it.)
"""

import json
import os
import stat
import tomllib

MAX_FILE = 16 * 1024 * 1024  # bytes of a file the suite reads


def read_text(path):
    """The text of the file at `path`, within the bounds above; ValueError if it cannot be read."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # (a pipe would wait here)
    except OSError as error:
        raise ValueError(f"{path}: cannot be read: {error.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ValueError(f"{path}: not a regular file")
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            data = file.read(MAX_FILE + 1)
    except OSError as error:
        raise ValueError(f"{path}: cannot be read: {error.strerror}") from None
    finally:
        os.close(descriptor)
    if len(data) > MAX_FILE:
        raise ValueError(f"{path}: over {MAX_FILE // 1024 // 1024} MiB, more than the suite reads")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text (byte {error.start} is not)") from None


def read_json(path):
    """The JSON value in the file at `path`; ValueError if it cannot be read or is not JSON."""
    text = read_text(path)
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{path}: nests arrays and objects deeper than the suite reads") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON: {error.msg} (line {error.lineno}, column {error.colno})") from None
    except ValueError as error:  # a number of too many digits, say
        raise ValueError(f"{path}: not JSON: {str(error).split(';')[0]}") from None


def read_toml(path):
    """The TOML document in the file at `path`; ValueError if it cannot be read or is not TOML."""
    text = read_text(path)
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ValueError(f"{path}: nests arrays and tables deeper than the suite reads") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not TOML: {error}") from None
