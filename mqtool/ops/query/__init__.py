"""``mqtool query``: one module per layout (``rocketmq``, ``kafka``)."""
