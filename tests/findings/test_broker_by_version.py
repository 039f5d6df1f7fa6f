"""The findings reference's per-version texts (``CodeInfo.broker``) name the broker models mqtool
models, every one of them, and say the rule that model's recovery follows."""

from __future__ import annotations

from mqtool.findings import CODES
from mqtool.store.model import rocketmq_broker


def test_rocketmq_texts_name_every_modelled_broker_once() -> None:
    models = [rocketmq_broker.OLD_MODEL, rocketmq_broker.NEW_MODEL]
    said = {code: info.broker for code, info in CODES.items() if code.startswith("RMQ-") and info.broker}
    assert said, "no RocketMQ code says what each modelled broker does"
    for code, pairs in said.items():
        assert [model for model, _ in pairs] == models, code


def test_refused_records_follow_each_models_restart_rule() -> None:
    # the refused-record codes are what the store's record classification gives
    from mqtool.store import rocketmq as rmq

    texts = dict(CODES["RMQ-CL-BODY-CRC"].broker)
    assert "last three CommitLog files" in texts[rocketmq_broker.OLD_MODEL]  # normal_start "third-last"
    assert "ConsumeQueues' highest" in texts[rocketmq_broker.NEW_MODEL]  # normal_start "consume-queue-max"
    refused = {code for code, info in CODES.items() if info.broker == CODES["RMQ-CL-BODY-CRC"].broker}
    assert refused <= set(rmq.RECORD_CODES.values())
