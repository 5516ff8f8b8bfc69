"""A real S3-compatible server (moto's server mode) on 127.0.0.1 for the storage tests.

    python tests/storage/moto_server.py

It prints its port on the first line of stdout and serves until its stdin is closed (the test
session ends, or dies). Requests are checked against IAM once the tests enable it.
"""

import sys

from moto.server import ThreadedMotoServer

if __name__ == "__main__":
    server = ThreadedMotoServer("127.0.0.1", 0, verbose=False)
    server.start()
    print(server.get_host_and_port()[1], flush=True)
    sys.stdin.read()
    server.stop()
