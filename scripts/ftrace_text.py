"""Reads ftrace's text output (`trace` of an instance, as
scripts/wake-path-trace.sh writes it), shared by the wake_*.py scripts."""
import re

RX = re.compile(r'^\s*(.*?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+):\s+(\w+):\s*(.*)$')


def records(path):
    """Yields (comm, pid, cpu, t_s, event, args) for every event line of the
    trace at `path`, t_s in seconds; other lines (headers, lost-event notes)
    are skipped."""
    with open(path, errors='replace') as f:
        for line in f:
            m = RX.match(line)
            if m:
                yield (m.group(1), int(m.group(2)), int(m.group(3)),
                       float(m.group(5)), m.group(6), m.group(7))
