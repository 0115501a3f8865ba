"""atheris target: TensorBoard event files (TFRecord framing, CRC-32C, Event/Summary protobufs)."""

from _harness import main, scratch

from trainproof.parsers import read_run


def target(data: bytes) -> None:
    read_run(scratch("events.out.tfevents.1.fuzz", data), "tfevents")


if __name__ == "__main__":
    main(target)
