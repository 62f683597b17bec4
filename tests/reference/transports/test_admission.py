"""Admission (admission.py): places given by address, the turn of costly requests, cheap requests first,
under every transport."""

import json
import socket
import threading
import time

import pytest

from reference import engine, load, protocol
from reference.transports import admission
from reference.transports.admission import Admission, Places
from reference.transports.asgi import make_application as asgi_application
from reference.transports.wsgi import make_application as wsgi_application
from tests.support.servers import Connection, serving, until, uvicorn_serving


def holders(places):
    return [place.address for place in places.held]


def test_a_newcomer_takes_a_place_of_the_address_holding_two_more_than_its_own():
    places, given_up = Places(3), []
    for _ in range(3):
        places.take("10.0.0.1", cancel=lambda: given_up.append("10.0.0.1"))
    assert places.take("10.0.0.1") is None  # (one of its own: it holds no fewer than itself)
    assert places.take("10.0.0.2") is not None and given_up == ["10.0.0.1"]
    assert places.take("10.0.0.2") is None  # 2 and 1: no longer two more than the newcomer's
    assert sorted(holders(places)) == ["10.0.0.1", "10.0.0.1", "10.0.0.2"]


def test_a_place_given_up_is_gone_and_releasing_it_changes_nothing():
    places = Places(1)
    first = places.take("a")
    assert places.take("b") is None  # (a holds one, b none: not two more)
    places.size = 2
    places.take("a")
    newcomer = places.take("b")
    assert newcomer is not None and first.cancelled
    places.release(first)
    assert sorted(holders(places)) == ["a", "b"]


def test_a_transport_ranks_whose_place_goes_first():
    """The guard gives the slowest first; here, a rank that names holders, the smallest first."""
    places = Places(2, rank=lambda place, holding, mine: place.holder)
    places.take("a", holder=5)
    places.take("a", holder=3)
    places.take("b", holder=4)
    assert sorted(place.holder for place in places.held) == [4, 5]


def test_waiters_for_the_turn_are_bounded_and_a_crowded_one_gives_way():
    """QUEUE may wait; the next from the same address gets no place at once; one from another address
    takes the place of a waiter of the address holding the most, which stops waiting at once."""
    turns, outcomes = Admission(wait=5), {}
    turns.lock.acquire()  # (the turn is taken)

    def wait(name, address):
        started = time.monotonic()
        try:
            with turns.turn(address):
                outcomes[name] = "turn"
        except TimeoutError as error:
            outcomes[name] = (str(error), round(time.monotonic() - started, 1))
    waiters = [threading.Thread(target=wait, args=(i, "10.0.0.1")) for i in range(admission.QUEUE)]
    for thread in waiters:
        thread.start()
    until(lambda: len(turns.waiting.held) == admission.QUEUE)  # (every waiter in its place)
    wait("one too many", "10.0.0.1")
    assert outcomes["one too many"] == ("no place to wait for the turn of costly requests", 0.0)
    newcomer = threading.Thread(target=wait, args=("newcomer", "10.0.0.2"))
    newcomer.start()
    until(lambda: len(outcomes) == 2)  # (a waiter gave its place up)
    given_up = [value for name, value in outcomes.items() if name != "one too many"]
    assert given_up == [("a waiter's place went to a newcomer", given_up[0][1])] and given_up[0][1] < 1
    turns.lock.release()
    for thread in [*waiters, newcomer]:
        thread.join(10)
    assert list(outcomes.values()).count("turn") == admission.QUEUE


def test_a_request_that_holds_the_turn_takes_it_again_at_once():
    """A large request's turn holds for its function's (learned costly) too."""
    turns = Admission()
    with turns.turn("a"):
        with turns.turn("a"):
            assert turns.owner == threading.get_ident()
    assert turns.owner is None


def test_a_costly_request_lets_cheap_ones_in_flight_go_first_for_a_while():
    turns, order, inside = Admission(), [], threading.Event()

    def cheap():
        with turns.cheap():
            inside.set()
            time.sleep(0.02)
            order.append("cheap")
    threading.Thread(target=cheap).start()
    assert inside.wait(30)  # (the cheap one in flight: it may be over by the time the turn is asked, as it lasts 20 ms)
    with turns.turn("a"):
        order.append("costly")
    assert order == ["cheap", "costly"]
    with turns.cheap():  # (a cheap request that takes the turn is costly while it holds it)
        with turns.turn("a"):
            assert turns.in_flight == 0
        assert turns.in_flight == 1


def test_a_cheap_request_that_lasts_is_let_go_first_for_a_while_only():
    turns, release = Admission(), threading.Event()

    def lasting():
        with turns.cheap():
            release.wait(5)
    threading.Thread(target=lasting).start()
    until(lambda: turns.in_flight == 1)  # (the cheap one in flight)
    started = time.monotonic()
    with turns.turn("a"):
        assert admission.CHEAP_FIRST <= time.monotonic() - started < 4  # (not the 5 s the cheap one lasts)
    release.set()


# Cheap calls go first, whatever carries them: while a cheap call is answered, a costly one that is ready
# waits for it (for CHEAP_FIRST seconds at most) rather than take the interpreter from it.

SCHEMA = load([{"fn.cheap": {}, "->": [{"Ok_": {}}]}, {"fn.costly": {"pad": "string"}, "->": [{"Ok_": {}}]}])
LARGE = json.dumps([{}, {"fn.costly": {"pad": "x" * 20_000}}]).encode()


def ordered(serve, kind=engine.Service):
    """The order in which a cheap call that takes 30 ms, and a large one sent once the cheap one is being
    answered, were answered by a service that `serve` carries (a context giving its URL). (The large one
    was sent 5 ms after the cheap one: on a busy machine, it sometimes came first.)"""
    order, answering = [], threading.Event()

    def cheap(arguments, headers):
        answering.set()
        time.sleep(0.03)
        order.append("cheap")
        return {"Ok_": {}}
    service = kind(SCHEMA, {"fn.cheap": cheap, "fn.costly": lambda a, h: order.append("costly") or {"Ok_": {}}})
    with serve(service) as url:
        first = threading.Thread(target=lambda: Connection(url).post(b'[{}, {"fn.cheap": {}}]'))
        first.start()
        assert answering.wait(10)
        assert Connection(url).post(LARGE)[0] == 200
        first.join(10)
    return order


@pytest.mark.filterwarnings("ignore:Uvicorn's native WSGI implementation is deprecated")  # (a threaded WSGI server)
@pytest.mark.parametrize("serve", [
    lambda service: _url(serving(service)),
    lambda service: _url(serving(service, plain=True)),
    lambda service: uvicorn_serving(asgi_application(service)),
    lambda service: uvicorn_serving(wsgi_application(service), interface="wsgi"),
], ids=["guard", "plain", "asgi", "wsgi"])
def test_a_costly_call_lets_a_cheap_one_go_first_under_every_transport(serve):
    assert ordered(serve) == ["cheap", "costly"]


class _url:
    """A serving() context that gives its server's URL."""

    def __init__(self, context):
        self.context = context

    def __enter__(self):
        return self.context.__enter__().url

    def __exit__(self, *exc_info):
        return self.context.__exit__(*exc_info)


def test_the_plain_transport_keeps_its_connection_limit_too():
    """--max-connections with --plain: beyond it, a newcomer of the same address gets 503 (one of another
    address takes a place of the crowded one, as everywhere)."""
    with serving(protocol.Service(SCHEMA, {"fn.cheap": lambda a, h: {"Ok_": {}}, "fn.costly": None}), plain=True,
                 max_connections=2) as server:
        held = [socket.create_connection(server.server_address[:2], timeout=5) for _ in range(2)]
        until(lambda: len(server.admission.connections.held) == 2)  # (both places taken)
        with socket.create_connection(server.server_address[:2], timeout=5) as refused:
            assert refused.recv(100).startswith(b"HTTP/1.1 503 ")
        status, _, _ = Connection(server.url, "127.0.0.2").post(b'[{}, {"fn.cheap": {}}]')
        assert status == 200
        for sock in held:
            sock.close()
