#!/bin/bash
# start a private postgres for benchmarking
D=$(mktemp -d /tmp/lattice-bench-XXXX); chmod 777 $D
runuser -u postgres -- /usr/lib/postgresql/15/bin/initdb -D $D/data -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D $D/data -l $D/log -w start -o "-p 55432 -k $D -c listen_addresses=127.0.0.1 -c fsync=off" >/dev/null
echo $D
