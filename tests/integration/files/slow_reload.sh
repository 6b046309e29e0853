#!/bin/sh
# A systemd generator for tests only (test_power_loss.yml installs it into the host's
# /etc/systemd/system-generators): while /run/refit-test/slow-reload exists, the next
# daemon-reload takes SLOW seconds (3), and says so in /run/refit-test/in-reload as it begins.
# A test then strikes between a unit's install and its start, which is otherwise a few ms.
# /run is a tmpfs: a boot runs it disarmed.
arm=/run/refit-test/slow-reload
[ -e "$arm" ] || exit 0
rm -f "$arm"
: > /run/refit-test/in-reload
sleep 3
