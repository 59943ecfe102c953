"""Dial a service with OpenZiti's C SDK (PyPI openziti 0.6.0) and keep the connection: each line read on
stdin is sent and read back whole (the service echoes), then {"echoed": LINE} is printed; at the end of
stdin the connection is closed. What an SDK connected across a controller's certificate renewal does.
Prints {"connected": true} once dialed."""
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
sock.settimeout(30)
print(json.dumps({'connected': True}), flush=True)
for line in sys.stdin:
    data = line.strip().encode()
    sock.sendall(data)
    got = b''
    try:
        while len(got) < len(data):
            chunk = sock.recv(len(data) - len(got))
            if not chunk:
                break
            got += chunk
    except Exception as e:  # said, not raised
        print(json.dumps({'error': str(e)}), flush=True)
        continue
    print(json.dumps({'echoed': got.decode(errors='replace')}), flush=True)
sock.close()
os._exit(0)
