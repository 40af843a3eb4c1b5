"""The WSGI environ the server builds for a request that has arrived whole."""

import h11

from extender.serving import wsgi


def request(target: bytes, headers: list[tuple[bytes, bytes]]) -> h11.Request:
    return h11.Request(method=b"POST", target=target, headers=[(b"Host", b"reprieve"), *headers])


def test_environ_carries_the_whole_body_and_safe_headers():
    env = wsgi.environ(
        request(
            b"/pre%65mpt?x=1",
            [
                (b"Content-Type", b"application/json"),
                (b"Transfer-Encoding", b"chunked"),  # de-chunked already: the app sees a length
                (b"X-Trace", b"a"),
                (b"X-Trace", b"b"),
                (b"X_Forwarded_For", b"10.0.0.1"),  # would pose as X-Forwarded-For
            ],
        ),
        b'{"Pod": {}}',
        scheme="https",
        server=("127.0.0.1", 8888),
        client=("127.0.0.2", 40000),
    )
    assert (env["PATH_INFO"], env["QUERY_STRING"], env["wsgi.url_scheme"]) == ("/preempt", "x=1", "https")
    assert env["CONTENT_LENGTH"] == "11" and env["wsgi.input"].read() == b'{"Pod": {}}'
    assert env["CONTENT_TYPE"] == "application/json" and env["HTTP_X_TRACE"] == "a,b"
    assert "HTTP_X_FORWARDED_FOR" not in env and "HTTP_TRANSFER_ENCODING" not in env
    assert env["REMOTE_ADDR"] == "127.0.0.2"


def test_call_collects_status_headers_and_body_and_closes_the_result():
    closed = []

    class Result(list):
        def close(self):
            closed.append(True)

    def app(environ, start_response):
        write = start_response("201 Created", [("X-A", "1")])
        write(b"early ")
        return Result([b"and ", b"late"])

    assert wsgi.call(app, {}) == (201, [("X-A", "1")], b"early and late")
    assert closed == [True]
