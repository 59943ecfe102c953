"""A burst of closes with OpenZiti's C SDK (PyPI openziti 0.6.0, libziti 0.29.3): what
test/fabric/csdk-burst.test.ts drives. Prints JSON lines.

  host IDENTITY SERVICE          bind SERVICE; accept for ever, one echo thread per connection.
                                 Prints {"listening": SERVICE}, then {"accepted": N} for each connection.
  dial IDENTITY SERVICE COUNT    open COUNT connections one after another (each echoes 10 bytes), hold them
                                 all, then close them all at once. Prints {"opened": N, "failed": [...]}
                                 once all are open, {"closed": N} after closing them.

A client that closes many connections together (a browser behind a tunneler, a pool shutting down) is
what made a C SDK host stall behind ztc's router (issue 43, item 4).
"""
import json
import os
import socket
import sys
import threading
import time

import openziti
from openziti import zitilib


def out(**kw):
    print(json.dumps(kw), flush=True)


def host(identity, service):
    ztx = openziti.load(identity)
    server = ztx.bind(service)
    server.listen(128)
    out(listening=service)
    accepted = 0

    def echo(conn):
        try:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                conn.sendall(chunk)
        except OSError:
            pass
        finally:
            conn.close()

    while True:
        conn, _ = server.accept()
        accepted += 1
        out(accepted=accepted)
        threading.Thread(target=echo, args=(conn,), daemon=True).start()


def connect(ztx, service):
    fd = zitilib.ziti_socket(socket.SOCK_STREAM)
    # openziti 0.6.0's ZitiContext.connect cannot pass "no terminator": call the library directly.
    rc = zitilib._ziti_connect(fd, ztx._ctx, service.encode(), None)
    if rc != 0:
        os.close(fd)
        raise OSError(zitilib.errorstr(rc) if hasattr(zitilib, 'errorstr') else str(rc))
    return socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0, fd)


def dial(identity, service, count):
    ztx = openziti.load(identity)
    socks = []
    failed = []
    for i in range(int(count)):
        try:
            s = connect(ztx, service)
            s.settimeout(10)
            s.sendall(b'0123456789')
            got = b''
            while len(got) < 10:
                chunk = s.recv(10 - len(got))
                if not chunk:
                    break
                got += chunk
            if got != b'0123456789':
                raise OSError(f'echo {got!r}')
            socks.append(s)
        except Exception as e:  # said, not raised: the test reads which dials failed and why
            failed.append(f'{i}: {e}')
    out(opened=len(socks), failed=failed[:5], failures=len(failed))
    for s in socks:
        s.close()
    # libziti closes its side asynchronously: give its loop a moment to send every StateClosed.
    time.sleep(1)
    out(closed=len(socks))


if __name__ == '__main__':
    cmd, *args = sys.argv[1:]
    {'host': host, 'dial': dial}[cmd](*args)
    os._exit(0)
