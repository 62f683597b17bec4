"""The driver of a client or a schema loader under test: a program of its own, spoken to in JSON lines.

How this works
--------------
The suite cannot call a library written in another language, so it runs a
small program that can: `Driver(command, arguments)` starts it and trades
JSON lines with it, an instruction on its standard input, a reply on its
standard output (conformance/README.md). A driver that dies or stops
answering is restarted, the unanswered instruction failing with its last
words on standard error; one that dies before it ever answered (it cannot
start) stops the run (Trouble).
"""

import json
import queue
import shlex
import subprocess
import threading
from collections import deque

from .remote import Trouble


def each(cases, run_case, progress=None):
    """Run `run_case` on the cases one at a time (as a driver answers), telling `progress` of each Result;
    stop when it answers True."""
    results = []
    for case in cases:
        results.append(run_case(case))
        if progress and progress(results[-1]):
            break
    return results


class Driver:
    """The driver process: instructions in on stdin, results out on stdout, one JSON line each."""

    def __init__(self, command, arguments=()):
        self.command, self.arguments, self.number, self.answered = command, list(arguments), 0, False
        self.start()

    def start(self):
        try:
            self.process = subprocess.Popen([*shlex.split(self.command), *self.arguments], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        except (OSError, ValueError) as error:
            raise Trouble(f"cannot start the driver {self.command!r}: {getattr(error, 'strerror', None) or error}")
        self.lines, self.errors = queue.Queue(), deque(maxlen=20)
        threading.Thread(target=self._read, args=(self.process.stdout, self.lines.put), daemon=True).start()
        self.reading_errors = threading.Thread(target=self._read, args=(self.process.stderr, self.errors.append),
                                               daemon=True)
        self.reading_errors.start()

    @staticmethod
    def _read(stream, keep):
        for line in stream:
            keep(line.rstrip("\n"))
        keep(None)  # the end of the stream

    def call(self, instruction, seconds):
        """Send one instruction; return the driver's JSON reply, or a string saying what went wrong."""
        self.number += 1
        instruction = {"id": self.number, **instruction}
        try:
            self.process.stdin.write(json.dumps(instruction) + "\n")
            self.process.stdin.flush()
            line = self.lines.get(timeout=seconds)
        except queue.Empty:
            self.restart()
            return f"the driver did not answer within {seconds:g} s (it was restarted)"
        except OSError:
            line = None
        if line is None:
            status = self.process.wait()
            self.reading_errors.join(timeout=2)  # (its last words may still be on their way from stderr)
            tail = " | ".join(e for e in self.errors if e)[-500:]
            if not self.answered:  # its last line on stderr says why, as a traceback's does
                last = next((error for error in reversed(self.errors) if error), "")
                raise Trouble(f"the driver {self.command!r} exited with status {status} before answering "
                              f"anything" + (f": {last}" if last else ""))
            self.restart()
            return f"the driver exited with status {status}" + (f": {tail}" if tail else "")
        try:
            reply = json.loads(line)
        except ValueError:
            if not self.answered:  # it may not be a driver at all, or it logs to the wrong stream
                raise Trouble(f"the driver {self.command!r} wrote {line[:200]!r} where its reply to the first "
                              "instruction was due; a driver writes only its replies on standard output, one "
                              "JSON line each (logs go to standard error)")
            return f"the driver wrote a line that is not JSON: {line[:200]!r}"
        if type(reply) is not dict or reply.get("id") != self.number:
            return f"the driver's reply does not answer instruction {self.number}: {line[:200]}"
        self.answered = True
        return reply

    def restart(self):
        self.stop()
        self.start()

    def stop(self):
        self.process.kill()
        self.process.wait()
