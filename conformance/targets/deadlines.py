"""Deadlines: HTTP exchanges that end in time, however slowly or endlessly a server answers.

Given a timeout, Python's http.client waits that long for each read: a server
that sends a byte a second, or `100 Continue` after `100 Continue`, keeps it
for as long as it goes on. A `Connection` here gives every read and write of
an exchange only the time left until the exchange's `deadline`, which
`Connection.exchange()` sets, then says TimeoutError once it has passed.
"""

import http.client
import io
import math
import socket
import time


class Deadline:
    """A connection's socket, each read and write given the time left until its deadline."""

    def __init__(self, sock, connection):
        self.sock, self.connection, self.readers, self.closed = sock, connection, 0, False

    def left(self):
        left = self.connection.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the exchange took longer than its timeout")
        self.sock.settimeout(left)

    def sendall(self, data):
        self.left()
        self.sock.sendall(data)

    def recv_into(self, buffer):
        self.left()
        return self.sock.recv_into(buffer)

    def makefile(self, mode="rb"):
        self.readers += 1
        return io.BufferedReader(Reader(self))

    def close(self, reader=False):  # as a socket, it closes once its last reader has
        self.readers -= reader
        self.closed = self.closed or not reader
        if self.closed and not self.readers:
            self.sock.close()


class Reader(io.RawIOBase):
    def __init__(self, deadline):
        self.deadline = deadline

    def readable(self):
        return True

    def readinto(self, buffer):
        return self.deadline.recv_into(buffer)

    def close(self):
        if not self.closed:
            self.deadline.close(reader=True)
        super().close()


class Deadlined:
    deadline = math.inf

    def exchange(self, seconds):
        """Start an exchange that must end within `seconds`, connecting included."""
        self.deadline = time.monotonic() + seconds
        return self

    def connect(self):
        self.timeout = max(self.deadline - time.monotonic(), 0.001)
        super().connect()  # type: ignore[misc]
        self.sock = Deadline(self.sock, self)


class Connection(Deadlined, http.client.HTTPConnection):
    pass


class SecureConnection(Deadlined, http.client.HTTPSConnection):
    pass


TIMEOUT = (socket.timeout, TimeoutError)
