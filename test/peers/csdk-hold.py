"""Dial a service with OpenZiti's C SDK (PyPI openziti 0.6.0), check one echo, then hold the connection
open and say when the network ends it: what a user of a revoked identity sees. Prints JSON lines:
{"connected": true} once the echo came back, {"closed": ..., "error": ...} when the connection ended."""
import json
import os
import socket
import sys

import openziti
from openziti import zitilib

identity, service = sys.argv[1:3]
ztx = openziti.load(identity)
fd = zitilib.ziti_socket(socket.SOCK_STREAM)
zitilib.check_error(zitilib._ziti_connect(fd, ztx._ctx, service.encode(), None))
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0, fd)
sock.sendall(b'ping')
got = b''
while len(got) < 4:
    chunk = sock.recv(4 - len(got))
    if not chunk:
        break
    got += chunk
print(json.dumps({'connected': got == b'ping'}), flush=True)
sock.settimeout(60)
error = ''
try:
    while sock.recv(65536):
        pass
except Exception as e:  # a reset or the timeout: said, not raised
    error = str(e)
print(json.dumps({'closed': True, 'error': error}), flush=True)
os._exit(0)
