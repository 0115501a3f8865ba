"""atheris target: torch checkpoints (.pt ZIP archives and the pickle inside, never
executed), as `env --checkpoint` inspects them."""

from _harness import main, scratch

from trainproof.probes.checkpoint import inspect_checkpoint
from trainproof.rules.env_checkpoint import read_caps

CAPS = read_caps()


def target(data: bytes) -> None:
    inspect_checkpoint(str(scratch("model.pt", data)), CAPS)


if __name__ == "__main__":
    main(target)
