"""mqtool: offline operations toolkit for message-queue store directories."""

__version__ = "0.1.0"
