// The echo demo in Python with OpenZiti's own C SDK (PyPI `openziti` 0.6.0): what `ztc quickstart` writes
// into the data dir so its printed next steps really carry bytes, and what the C SDK tests run. One
// source for both, kept as text here so it travels inside the single executable.
export const ECHO_DEMO_PY = `"""An echo through an OpenZiti network with OpenZiti's own C SDK (libziti, from PyPI openziti 0.6.0).

Written by ztc quickstart into its data dir; each command prints one JSON line on success.
  enroll JWT_FILE OUT_JSON          enroll with the C SDK (it checks the JWT against the TLS certificate)
  host IDENTITY SERVICE [N]         bind SERVICE and echo N connections (default 1), then exit
  dial IDENTITY SERVICE BYTES       dial SERVICE, send BYTES random bytes, read them back, compare
"""
import ctypes
import hashlib
import json
import os
import socket
import sys
import threading
import time

import openziti
from openziti import zitilib


def enroll(jwt_file, out):
    identity = openziti.enroll(open(jwt_file).read().strip())
    with open(out, 'w') as f:
        f.write(identity)
    os.chmod(out, 0o600)
    print(json.dumps({'enrolled': out}), flush=True)


def host(identity, service, count='1'):
    ztx = openziti.load(identity)
    server = ztx.bind(service)
    server.listen(5)
    print(json.dumps({'listening': service}), flush=True)
    for _ in range(int(count)):
        conn, peer = server.accept()
        total = 0
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            conn.sendall(chunk)
            total += len(chunk)
        # EOF here means the dialer closed after reading every byte back. (Not a half close: the C SDK's
        # socket bridge closes outright once both sides said EOF, dropping writes still queued.)
        conn.close()
        print(json.dumps({'echoed': total, 'peer': peer[0]}), flush=True)
    server.close()


def dial(identity, service, size):
    size = int(size)
    ztx = openziti.load(identity)
    started = time.time()
    fd = zitilib.ziti_socket(socket.SOCK_STREAM)
    # openziti 0.6.0's ZitiContext.connect cannot pass "no terminator": call the library directly.
    zitilib.check_error(zitilib._ziti_connect(fd, ztx._ctx, service.encode(), None))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0, fd)
    connected = time.time()
    payload = os.urandom(size)
    sent = hashlib.sha256(payload).hexdigest()

    def writer():
        view = memoryview(payload)
        for i in range(0, size, 65536):
            sock.sendall(view[i:i + 65536])

    t = threading.Thread(target=writer)
    t.start()
    got = hashlib.sha256()
    received = 0
    while received < size:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        got.update(chunk)
        received += len(chunk)
    t.join()
    done = time.time()
    sock.close()
    print(json.dumps({'sent': size, 'received': received, 'match': got.hexdigest() == sent,
                      'setupMs': round((connected - started) * 1000, 1),
                      'mibPerSecond': round(size / 1048576 / max(done - connected, 1e-6), 2)}), flush=True)
    sys.exit(0 if received == size and got.hexdigest() == sent else 1)


if __name__ == '__main__':
    cmd, *args = sys.argv[1:]
    {'enroll': enroll, 'host': host, 'dial': dial}[cmd](*args)
    os._exit(0)
`;
