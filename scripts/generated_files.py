"""Files the derivation scripts generate (workloads/*.json,
recordings/*/queues.json): written whole (to a temporary sibling, then
renamed over the file) or, with --check, compared with what is committed."""

import os


def write_or_check(path, text, check, stale):
    """Writes `text` to `path` whole, or with `check` appends `path` to
    `stale` when the file is missing or differs."""
    if check:
        try:
            with open(path) as f:
                if f.read() != text:
                    stale.append(path)
        except OSError:
            stale.append(path)
        return
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
