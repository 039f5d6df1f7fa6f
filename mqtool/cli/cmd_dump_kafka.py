"""``mqtool dump kafka-*``: Kafka segment, index and checkpoint families."""
