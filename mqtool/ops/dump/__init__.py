"""``mqtool dump``: one module per layout (``rocketmq``, ``kafka``, ``legacy`` (Jafka and MetaQ))."""
