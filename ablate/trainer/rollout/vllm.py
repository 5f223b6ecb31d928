"""vLLM rollout (GPU): a colocated engine inside the trial process, weights synced after every update.

Design (as TRL's colocate mode): the engine runs in-process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) on the
trial's GPU with ``rollout.gpu_memory_utilization`` of its memory; with ``rollout.enable_sleep_mode`` it
sleeps (KV cache freed, weights offloaded) while the policy trains and wakes up for the next rollout. After
each optimizer update the trainer's weights are loaded into the engine's model (``load_weights``) before
the next generation. Each request gets a seed drawn from the trial's generator, so seeds differ across trial
seeds and a trial is repeatable. Sampling logprobs are the processed (temperature/top-p) ones where the
installed vLLM supports ``logprobs_mode``.
"""

from __future__ import annotations

import os

import torch

from ablate.trainer.rollout import ROLLOUT_BACKENDS, RolloutBatch, SamplingParams, left_pad


def require_vllm():
    """Import vLLM lazily; a clear message when it or a GPU is missing."""
    if not torch.cuda.is_available():
        raise RuntimeError("rollout=vllm needs a CUDA GPU (none is visible); use rollout=hf on CPU")
    try:
        import vllm
    except ImportError:
        raise RuntimeError("rollout=vllm needs vLLM: pip install -e '.[vllm]' (or use rollout=hf)") from None
    return vllm


def _engine_model(llm):
    """The engine's torch module (in-process executor), across vLLM releases."""
    executor = llm.llm_engine.model_executor
    worker = executor.driver_worker
    worker = getattr(worker, "worker", worker)
    return worker.model_runner.model


@ROLLOUT_BACKENDS.register("vllm")
class VLLMRollout:
    def __init__(self, rollout_cfg, model, tokenizer):
        vllm = require_vllm()
        # engine in this process, so weights load into it directly
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        self.cfg, self.tok = rollout_cfg, tokenizer
        name = model.config._name_or_path or model.name_or_path
        if not name:
            raise RuntimeError("rollout=vllm needs model=hf with a hub id or a local model directory")
        kwargs = dict(
            model=name,
            dtype=str(model.dtype).replace("torch.", ""),
            gpu_memory_utilization=rollout_cfg.gpu_memory_utilization,
            tensor_parallel_size=rollout_cfg.tensor_parallel_size,
            enable_sleep_mode=rollout_cfg.enable_sleep_mode,
            max_model_len=getattr(model.config, "max_position_embeddings", None),
            seed=0,
            enable_prefix_caching=True,
        )
        try:
            self.llm = vllm.LLM(**kwargs, logprobs_mode="processed_logprobs")
            self.processed_logprobs = True
        except TypeError:  # older vLLM: raw logprobs (before temperature / top-p)
            self.llm = vllm.LLM(**kwargs)
            self.processed_logprobs = False
        self._vllm = vllm
        self.sleeping = False
        self.dirty = False

    def sync_weights(self, model) -> None:
        """Called after each update: the engine's weights are replaced before the next generation."""
        self.dirty = True
        self._model = model

    def _load_weights(self) -> None:
        state = {k: v.detach() for k, v in self._model.state_dict().items()}
        _engine_model(self.llm).load_weights(state.items())
        if hasattr(self.llm, "reset_prefix_cache"):
            self.llm.reset_prefix_cache()  # cached KV of the old weights must not be reused
        self.dirty = False

    def generate(
        self, prompts: list[list[int]], params: SamplingParams, generator: torch.Generator
    ) -> RolloutBatch:
        if self.sleeping:
            self.llm.wake_up()
            self.sleeping = False
        if self.dirty:
            self._load_weights()
        # one seed per request from the trial's generator: repeatable, and different across trial seeds
        seeds = torch.randint(
            0, 2**31 - 1, (len(prompts),), generator=generator, device=generator.device
        ).tolist()
        sps = [
            self._vllm.SamplingParams(
                n=1,
                temperature=params.temperature,
                top_p=params.top_p,
                max_tokens=params.max_new_tokens,
                logprobs=0,
                seed=int(s),
            )
            for s in seeds
        ]
        inputs = [{"prompt_token_ids": p} for p in prompts]
        outputs = self.llm.generate(inputs, sps, use_tqdm=False)
        if self.cfg.enable_sleep_mode:
            self.llm.sleep(level=1)
            self.sleeping = True
        return self._to_batch(prompts, outputs, params.max_new_tokens)

    def _to_batch(self, prompts, outputs, max_new: int) -> RolloutBatch:
        eos, pad = self.tok.eos_token_id, self.tok.pad_token_id
        rows, lps, trunc = [], [], []
        for out in outputs:
            o = out.outputs[0]
            ids = list(o.token_ids)
            lp = [
                float(d[t].logprob) if d is not None and t in d else 0.0
                for t, d in zip(ids, o.logprobs or [None] * len(ids), strict=False)
            ]
            stopped = o.finish_reason == "stop"
            if stopped and (not ids or ids[-1] != eos) and len(ids) < max_new:
                ids.append(eos)  # vLLM may drop the EOS token id from token_ids; training must see it
                lp.append(0.0)
            rows.append(ids)
            lps.append(lp)
            trunc.append(not stopped)
        T = max(1, max(len(r) for r in rows))
        N = len(rows)
        comp = torch.full((N, T), pad, dtype=torch.long)
        cmask = torch.zeros((N, T))
        slp = torch.zeros((N, T))
        for i, (r, lp) in enumerate(zip(rows, lps, strict=True)):
            comp[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            cmask[i, : len(r)] = 1.0
            slp[i, : len(lp)] = torch.tensor(lp)
        ids, mask = left_pad(prompts, pad)
        device = torch.device("cuda")
        return RolloutBatch(
            ids.to(device),
            mask.to(device),
            comp.to(device),
            cmask.to(device),
            slp.to(device),
            torch.tensor(trunc, device=device),
        )
