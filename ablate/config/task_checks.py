"""The ``task`` group's checks: the reward (the verifier's weights, or your functions), each task's data, and
the model a task needs. Values only; a launch check (the sandbox, a hub dataset) is in ablate.config.launch."""

from __future__ import annotations

from ablate.config.checks import _at_least, _fail, _fraction, _one_of, _positive


def _check_user_rewards(cfg) -> None:
    """task.rewards replace the verifier: its shaping keys and a reward model trained on its labels refused."""
    t = cfg.task
    _one_of("task.reward_signature", t.reward_signature, ("auto", "trl", "verl"))
    if t.reward_timeout < 0:
        _fail(
            "task.reward_timeout",
            t.reward_timeout,
            "must be >= 0 (0: called in the trial's process, no limit)",
        )
    if t.reward_weights and len(t.reward_weights) != len(t.rewards):
        _fail("task.reward_weights", list(t.reward_weights), f"one weight per function in task.rewards ({len(t.rewards)}), or none for 1 each")  # fmt: skip
    for key in ("format_weight", "process_weight"):
        if getattr(t, key):
            _fail(f"task.{key}", getattr(t, key), "shapes the rule verifier's reward, which task.rewards replaces: set it "
                  "to 0, or add a reward function for it to task.rewards")  # fmt: skip
    if cfg.algo.reward_model.kind == "learned":
        _fail(
            "algo.reward_model.kind",
            "learned",
            "a reward model in place of task.rewards: use one or the other",
        )


def _needs_real_model(cfg) -> None:
    if cfg.model.name == "tiny":
        _fail("model", "tiny", f"task={cfg.task.name} needs a real model (the tiny one reads only the embedded "
              "tasks' characters): model=smollm2, or model=hf model.name=<hub id or folder>")  # fmt: skip


def _check_code_task(cfg) -> None:
    """task=code: its eval set, a verifier that runs code (or your rewards), a real model."""
    t = cfg.task
    _at_least("task.n_train", t.n_train, 1)
    _at_least("task.n_eval", t.n_eval, 1)
    _one_of("task.eval_split", t.eval_split, ("generated", "humaneval"))
    if t.verifier != "code" and not t.rewards:
        _fail(
            "task.verifier",
            t.verifier,
            "task=code is scored by running its tests: task.verifier=code (or task.rewards)",
        )
    _needs_real_model(cfg)


def check_task(cfg) -> None:
    """The reward, and the embedded task's data, which must fit the rollout's response length."""
    t, r = cfg.task, cfg.rollout
    _positive("task.reward_scale", t.reward_scale)
    _fraction("task.process_weight", t.process_weight)
    if t.format_weight < 0:
        _fail("task.format_weight", t.format_weight, "must be >= 0")
    if t.rewards:
        _check_user_rewards(cfg)
    if t.system_prompt and cfg.model.name == "tiny":
        _fail("task.system_prompt", t.system_prompt[:40], "the tiny model reads only its task's characters: a "
              "system prompt needs a real model (model=smollm2, or model=hf model.name=...)")  # fmt: skip
    if t.name == "reverse":
        _at_least("task.min_len", t.min_len, 1)
        if t.max_len < t.min_len:
            _fail("task.max_len", t.max_len, f"must be >= task.min_len={t.min_len}")
        _at_least("task.n_train", t.n_train, 1)
        _at_least("task.n_eval", t.n_eval, 1)
        if len(set(t.alphabet)) < 2 or set(t.alphabet) & set("=<>"):
            _fail("task.alphabet", t.alphabet, "needs at least 2 distinct characters, none of '=', '<', '>'")
        room = sum(len(set(t.alphabet)) ** n // 2 for n in range(t.min_len, t.max_len + 1))
        if t.n_eval > room:
            _fail(
                "task.n_eval",
                t.n_eval,
                f"at most {room} held-out strings fit (half of each length's strings)",
            )
        _fraction("task.teacher_noise_per_char", t.teacher_noise_per_char)
        _fraction("task.teacher_noise_max", t.teacher_noise_max)
        _fraction("task.format_noise", t.format_noise)
        if r.max_response_length < t.max_len + 3:
            _fail(
                "rollout.max_response_length",
                r.max_response_length,
                f"must be >= task.max_len + 3 = {t.max_len + 3} (answer, two format tokens, EOS)",
            )
    elif t.name == "arithmetic":
        _at_least("task.n_train", t.n_train, 1)
        _at_least("task.n_eval", t.n_eval, 1)
        if not t.modules:
            _fail(
                "task.modules",
                list(t.modules),
                "name at least one generator module, e.g. [arithmetic__add_or_sub]",
            )
        d = list(t.difficulty)
        if len(d) != 2 or not 0.0 <= d[0] < d[1] <= 1.0:
            _fail(
                "task.difficulty",
                d,
                "must be [low, high] with 0 <= low < high <= 1 (parts of the entropy range)",
            )
    elif t.name == "code":
        _check_code_task(cfg)
    elif not t.path:
        _fail("task.path", t.path, f"task.name={t.name} needs a hub dataset name or a local file")
    if t.name not in ("reverse", "arithmetic", "code"):
        if not 0 <= t.eval_fraction < 1:
            _fail("task.eval_fraction", t.eval_fraction, "must be in [0, 1): the share of the data held out")
        _needs_real_model(cfg)
