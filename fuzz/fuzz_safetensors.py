"""atheris target: .safetensors files (8-byte header length, JSON header, data offsets)."""

from _harness import main, scratch

from trainproof.probes.checkpoint import inspect_checkpoint
from trainproof.rules.env_checkpoint import read_caps

CAPS = read_caps()


def target(data: bytes) -> None:
    inspect_checkpoint(str(scratch("model.safetensors", data)), CAPS)


if __name__ == "__main__":
    main(target)
