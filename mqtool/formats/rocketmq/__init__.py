"""Apache RocketMQ on-disk formats (pure: bytes <-> frozen dataclasses)."""
