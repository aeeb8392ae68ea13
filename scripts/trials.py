"""Acceptance trials 2, 3 and 4: does h2dlint point at the syncs maintainers removed in unseen projects?

Run on purpose, not in the test suite:

    python scripts/trials.py            # trial 2 (vLLM, transformers); needs `pip` and `h2dlint` in the same environment
    python scripts/trials.py --trial 3  # trial 3, blind: cases chosen without looking at h2dlint's output
    python scripts/trials.py --trial 4  # trial 4, blind: a second set chosen the same way (PR text and release diffs only)

For each case of the chosen trial the script downloads the last release before the fix and the
first one after it with `pip download` (cached in `.trials/`, git-ignored), extracts the one file
named, runs h2dlint on both (default rules, then `--select ALL`, JSON output, no cache, an empty
config so the repository's own settings do not leak in) and prints, per place the maintainers
changed, which findings touch it. Third-party code stays in `.trials/` and is never committed.

A finding "hits" a place when its line range (start to end line) overlaps the lines of the
changed statement. The "after" columns look at the replacement code in the after file, which
should be quiet. docs/trials.md (sections "Trial 2" and "Trial 3") lists the cases; trial 2's
results are discussed there, trial 3 is kept blind for the rule authors.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".trials"
BIN = Path(sys.executable).parent

# Wheels with compiled parts (vllm) need a platform; pip then accepts exactly these tags.
PLATFORMS = ["manylinux_2_24_x86_64", "manylinux_2_28_x86_64", "manylinux_2_31_x86_64", "manylinux_2_35_x86_64"]
BINARY_ONLY = {"vllm": ["--only-binary", ":all:", "--python-version", "3.12"] + [x for p in PLATFORMS for x in ("--platform", p)]}


@dataclass
class Place:
    before: tuple[int, int]  # lines of the changed statement in the before file
    after: tuple[int, int]  # lines of its replacement in the after file
    note: str


@dataclass
class Case:
    name: str
    pr: str
    package: str
    before: str
    after: str
    path: str  # inside the wheel (or the sdist's top folder)
    places: list[Place]


VLLM_41429 = "https://github.com/vllm-project/vllm/pull/41429 [Perf][1/n] Eliminate various GPU<->CPU syncs"

VLLM_51458 = "https://github.com/vllm-project/vllm/pull/51458 [Perf] Avoid some more unnecessary GPU<->CPU syncs"

CASES = [
    Case("vllm sampler logprob_token_ids", VLLM_41429, "vllm", "0.21.0", "0.22.0", "vllm/v1/sample/sampler.py", [
        Place((195, 197), (190, 192), "torch.tensor(token_ids, device=device) per request in a loop -> pinned CPU matrix + one non_blocking upload"),
    ]),
    Case("vllm GPU ngram batch reorder", VLLM_41429, "vllm", "0.21.0", "0.22.0", "vllm/v1/spec_decode/ngram_proposer_gpu.py", [
        Place((572, 572), (573, 573), "src_tensor = torch.tensor(reorder_src, device=device) -> async_tensor_h2d"),
        Place((573, 573), (574, 574), "dst_tensor = torch.tensor(reorder_dst, device=device) -> async_tensor_h2d"),
    ]),
    Case("vllm DP metadata all-reduce", VLLM_41429, "vllm", "0.21.0", "0.22.0", "vllm/v1/worker/dp_utils.py", [
        Place((47, 47), (48, 48), "tensor[0][dp_rank] = int into a CUDA tensor -> fill on CPU, upload once"),
        Place((48, 48), (49, 49), "tensor[1][dp_rank] = int into a CUDA tensor"),
        Place((49, 49), (50, 50), "tensor[2][dp_rank] = int into a CUDA tensor"),
        Place((50, 50), (51, 51), "tensor[3][dp_rank] = int into a CUDA tensor"),
    ]),
    Case("vllm bad_words", VLLM_41429, "vllm", "0.21.0", "0.22.0", "vllm/v1/sample/ops/bad_words.py", [
        Place((26, 26), (27, 27), "logits[last_token_id] = float (int index) -> slice assignment"),
    ]),
    Case("vllm MRv2 penalties", VLLM_41429, "vllm", "0.21.0", "0.22.0", "vllm/v1/worker/gpu/sample/penalties.py", [
        Place((286, 286), (281, 281), "prompt_bin_mask[idx_tensor] = 0 -> index_fill_"),
        Place((287, 287), (282, 282), "output_bin_counts[idx_tensor] = 0 -> index_fill_"),
    ]),
    Case("vllm gpu_model_runner", VLLM_41429, "vllm", "0.21.0", "0.22.0", "vllm/v1/worker/gpu_model_runner.py", [
        Place((1003, 1003), (1042, 1042), "torch.arange(seq_lens[i]) with a GPU scalar (pooling token_type_ids) -> CPU upper bound list"),
        Place((1006, 1008), (1049, 1051), "torch.concat(...).to(device=self.device) blocking H2D -> pinned buffer + non_blocking"),
        Place((2719, 2721), (2806, 2806), ".fill_(logits_indices[-1].item()) (fast prefill) -> broadcast the GPU scalar"),
    ]),
    Case("vllm chameleon", VLLM_51458, "vllm", "0.27.1", "0.28.0", "vllm/model_executor/models/chameleon.py", [
        Place((822, 822), (836, 836), "mapping[img_batch.to('cpu')]: D2H of the image tokens -> index a per-device copy of the mapping"),
        Place((823, 823), (836, 836), "img_tokens.to(device): blocking H2D of the result -> (gone)"),
        Place((1029, 1029), (1057, 1057), "logits[:, image_tokens] = min (Python-list index) -> cached index tensor + index_fill_"),
    ]),
    Case("vllm qwen3-omni audio chunks", VLLM_51458, "vllm", "0.27.1", "0.28.0", "vllm/model_executor/models/qwen3_omni_moe_thinker.py", [
        Place((439, 443), (444, 448), "torch.tensor([n] * k, device=feature_lens.device) -> async_tensor_h2d"),
    ]),
    Case("vllm glm4_1v image shapes", VLLM_51458, "vllm", "0.27.1", "0.28.0", "vllm/model_executor/models/glm4_1v.py", [
        Place((549, 549), (566, 575), "lengths = torch.tensor(lengths, device=device) -> numpy + one async_tensor_h2d"),
        Place((551, 553), (566, 575), "image_shapes = torch.tensor(image_shapes, device=device) -> numpy + async_tensor_h2d"),
        Place((819, 819), (804, 804), "image_shapes = torch.tensor([[t, h, w]], device=device) -> a host list"),
    ]),
    Case("transformers NoRepeatNGramLogitsProcessor",
         "https://github.com/huggingface/transformers/pull/47571 Vectorize NoRepeatNGramLogitsProcessor and remove its host sync",
         "transformers", "5.14.1", "5.15.0", "transformers/generation/logits_process.py", [
        Place((1041, 1041), (1130, 1132), "_get_ngrams: prev_input_ids[idx].tolist() per hypothesis -> tensor ops (unfold/compare)"),
        Place((1069, 1069), (1130, 1132), "_get_generated_ngrams: prev_input_ids[a:b].tolist() -> tensor ops"),
        Place((1142, 1142), (1137, 1139), "scores_processed[i, banned_tokens] = -inf (list index, per row) -> scatter_ + masked_fill"),
    ]),
]


# Trial 3 (blind). Only hunks whose purpose the pull request states (a sync or a blocking copy
# removed) are places; hunks that only wrap a kept sync in vLLM's `gpu_sync_allowed()` are not.

VLLM_51738 = "https://github.com/vllm-project/vllm/pull/51738 [Perf] Avoid more GPU<->CPU syncs on the model execution path"

TRANSFORMERS_20061 = "https://github.com/huggingface/transformers/pull/20061 Change constant torch.tensor to torch.full"

DEEPSPEED_5135 = "https://github.com/deepspeedai/DeepSpeed/pull/5135 tensorboard logging: avoid item() outside gas to improve performance"

DEEPSPEED_2500 = "https://github.com/deepspeedai/DeepSpeed/pull/2500 Remove unnecessary device synchronization for stage 2"

OLMO_CORE_68 = "https://github.com/allenai/OLMo-core/pull/68 Avoid an unnecessary host-device sync when created initial loss tensors"

TRL_6842 = "https://github.com/huggingface/trl/pull/6842 Remove one host sync from SFT chunked_nll loss"

SGLANG_14956 = "https://github.com/sgl-project/sglang/pull/14956 [Fix] avoid stream sync in _compute_mrope_positions"

DIFFUSERS_13564 = "https://github.com/huggingface/diffusers/pull/13564 Eliminate GPU sync overhead and CPU->GPU transfers across LTX2 pipeline"

CASES_3 = [
    Case("vllm mamba2 metadata", VLLM_51738, "vllm", "0.27.1", "0.28.0", "vllm/v1/attention/backends/mamba2_attn.py", [
        Place((153, 157), (158, 161), "prep_initial_states = torch.any(has_initial_states_p).item() -> derived from CPU prefill metadata"),
    ]),
    Case("vllm kv-sharing fast prefill", VLLM_51738, "vllm", "0.27.1", "0.28.0", "vllm/v1/attention/backends/utils.py", [
        Place((471, 471), (548, 548), "int(num_decode_tokens.max().item()) per step -> max_logits_per_req plumbed from the runner"),
        Place((472, 472), (545, 545), "int(num_decode_tokens.sum().item()) per step -> num_logits_indices (a host int)"),
    ]),
    Case("vllm gemma4 suppressed tokens", VLLM_51738, "vllm", "0.27.1", "0.28.0", "vllm/model_executor/models/gemma4_mm.py", [
        Place((2039, 2039), (2118, 2118), "logits[:, python_list] = -inf per call -> cached device index tensor + index_fill_"),
    ]),
    Case("vllm phi4mm image mask", VLLM_51738, "vllm", "0.27.1", "0.28.0", "vllm/model_executor/models/phi4mm.py", [
        Place((274, 274), (274, 274), "mask.type(torch.BoolTensor) (a CPU type: D2H) ... .to(target_device) (H2D) -> .bool()"),
    ]),
    Case("vllm diffusion_gemma request states", VLLM_51738, "vllm", "0.27.1", "0.28.0", "vllm/model_executor/models/diffusion_gemma.py", [
        Place((734, 740), (741, 747), "canvas[numpy slot indices] = ... (prefill path passes numpy: H2D of the index) -> device index"),
        Place((743, 743), (750, 750), "is_encoder_phase[slot_idx] = True (1-D element store) -> .fill_()"),
        Place((744, 744), (751, 751), "torch.tensor([slot_idx], device=self.device) -> async_tensor_h2d"),
        Place((745, 745), (752, 752), "step[slot_idx] = 0 -> .fill_()"),
        Place((746, 746), (753, 753), "accepted_canvas_history_len[slot_idx] = 0 -> .fill_()"),
        Place((750, 750), (757, 757), "is_encoder_phase[slot_idx] = False -> .fill_()"),
        Place((751, 751), (758, 758), "accepted_canvas_history_len[slot_idx] = 0 -> .fill_()"),
        Place((1152, 1152), (1164, 1166), "draft_tokens[ps, :] = canvas[ps] with a numpy index (two H2D copies) -> ps_gpu moved once"),
    ]),
    Case("transformers gpt2 attention", TRANSFORMERS_20061, "transformers", "4.24.0", "4.25.1", "transformers/models/gpt2/modeling_gpt2.py", [
        Place((185, 187), (185, 187), "attn_weights / torch.tensor(scale, device=...) per layer -> torch.full([], scale, device=...)"),
        Place((200, 200), (200, 200), "torch.tensor(mask_value, dtype=...).to(device) per layer -> torch.full([], ...).to(device)"),
    ]),
    Case("transformers decision_transformer attn", TRANSFORMERS_20061, "transformers", "4.24.0", "4.25.1",
         "transformers/models/decision_transformer/modeling_decision_transformer.py", [
        Place((173, 175), (173, 175), "same as gpt2 185 ('Copied from' GPT2Attention)"),
        Place((188, 188), (188, 188), "same as gpt2 200"),
    ]),
    Case("deepspeed engine loss logging", DEEPSPEED_5135, "deepspeed", "0.13.2", "0.13.3", "deepspeed/runtime/engine.py", [
        Place((1954, 1954), (1955, 1956), "self.losses += loss.mean().item() every micro-step -> accumulate on device, .item() at the boundary"),
    ]),
    Case("deepspeed zero2 average_tensor", DEEPSPEED_2500, "deepspeed", "0.7.7", "0.8.0", "deepspeed/runtime/zero/stage_1_and_2.py", [
        Place((942, 942), (940, 940), "torch.cuda.synchronize() before each bucket reduction -> reduction_stream.wait_stream(current)"),
    ]),
    Case("olmo-core trainer initial losses", OLMO_CORE_68, "ai2-olmo-core", "1.4.0", "1.5.0", "olmo_core/train/trainer.py", [
        Place((1057, 1057), (1093, 1093), "ce_batch_loss = torch.tensor(0.0, device=self.device) per step -> move_to_device (non_blocking)"),
        Place((1059, 1059), (1097, 1097), "z_batch_loss: same"),
    ]),
    Case("trl sft chunked_nll", TRL_6842, "trl", "1.10.0", "1.11.0", "trl/trainer/sft_trainer.py", [
        Place((190, 190), (202, 202), "if n_valid_tensor == 0: (GPU 0-d tensor in an if) -> folded into the general path, clamp(min=1)"),
    ]),
    Case("trl distillation chunked loss", TRL_6842, "trl", "1.10.0", "1.11.0", "trl/trainer/distillation_trainer.py", [
        Place((238, 238), (260, 260), "same as sft_trainer 190 (the distillation copy)"),
    ]),
    Case("sglang mrope decode positions", SGLANG_14956, "sglang", "0.5.6.post2", "0.5.7", "sglang/srt/model_executor/forward_batch_info.py", [
        Place((678, 683), (689, 694), "torch.full((3, 1), self.seq_lens[i] - 1, device=...): GPU 0-d fill value per request -> seq_lens_cpu"),
    ]),
    Case("diffusers ltx2 connector registers", DIFFUSERS_13564, "diffusers", "0.38.0", "0.39.0", "diffusers/pipelines/ltx2/connectors.py", [
        Place((304, 304), (309, 310), "hidden_states[i, mask[i].bool(), :] per batch row (nonzero sync each) -> argsort + gather"),
    ]),
]


# Trial 4 (blind). Same counting rule as trial 3: a place is a statement that the pull request
# changes to remove a sync or a blocking copy; code it only reshapes around that is not counted.

TRANSFORMERS_39870 = "https://github.com/huggingface/transformers/pull/39870 Remove unnecessary CUDA sync in qwen2_5_vl"

DEEPSPEED_5115 = "https://github.com/deepspeedai/DeepSpeed/pull/5115 Check overflow on device without host synchronization for each tensor"

SGLANG_19190 = ("https://github.com/sgl-project/sglang/pull/19190 [SGL] sync patch: Remove sync points, prefill cudagraph for DP, "
                "disable cache reset in mem check")

ADV_OPTM_5 = "https://github.com/Koratahiu/Advanced_Optimizers/pull/5 avoid CUDA syncs"

LIGHTNING_1254 = "https://github.com/Lightning-AI/pytorch-lightning/pull/1254 remove .item which causes sync issues"

FASTVIDEO_1217 = "https://github.com/hao-ai-lab/FastVideo/pull/1217 [perf]: Eliminate CPU-GPU synchronization bottlenecks in training pipeline"

CASES_4 = [
    Case("transformers qwen2_5_vl vision attention", TRANSFORMERS_39870, "transformers", "4.54.1", "4.55.0",
         "transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py", [
        Place((248, 248), (248, 248), "max_seqlen = (cu_seqlens[1:] - cu_seqlens[:-1]).max().item() per layer -> keep the 0-d tensor"),
    ]),
    Case("transformers qwen2_vl vision attention", TRANSFORMERS_39870, "transformers", "4.54.1", "4.55.0",
         "transformers/models/qwen2_vl/modeling_qwen2_vl.py", [
        Place((366, 366), (366, 366), "same as qwen2_5_vl 248"),
    ]),
    Case("transformers glm4v vision attention", TRANSFORMERS_39870, "transformers", "4.54.1", "4.55.0",
         "transformers/models/glm4v/modeling_glm4v.py", [
        Place((328, 328), (328, 328), "same as qwen2_5_vl 248"),
    ]),
    Case("transformers qwen2_5_omni attention", TRANSFORMERS_39870, "transformers", "4.54.1", "4.55.0",
         "transformers/models/qwen2_5_omni/modeling_qwen2_5_omni.py", [
        Place((595, 595), (595, 595), "same as qwen2_5_vl 248 (audio encoder attention)"),
        Place((930, 930), (930, 930), "same as qwen2_5_vl 248 (vision attention)"),
    ]),
    Case("deepspeed zero1/2 overflow check", DEEPSPEED_5115, "deepspeed", "0.13.2", "0.13.3", "deepspeed/runtime/zero/stage_1_and_2.py", [
        Place((1990, 1990), (1991, 1992), "ByteTensor([overflow]) from a host bool (H2D) -> the device result .byte().to(device)"),
        Place((2001, 2002), (2002, 2002), "has_overflow_serial() host bool + ByteTensor([overflow]) -> device result .byte().to(device)"),
        Place((2018, 2018), (2014, 2018), "_has_inf_or_nan: float(x.float().sum()) per gradient tensor -> isnan/isinf on device"),
    ]),
    Case("sglang mamba pool alloc", SGLANG_19190, "sglang", "0.5.9", "0.5.10", "sglang/srt/mem_cache/memory_pool.py", [
        Place((342, 342), (351, 355), "conv[i][:, select_index] = 0 (a host scalar stored per layer) -> expand a device zero"),
        Place((343, 343), (356, 360), "temporal[:, select_index] = 0 -> expand a device zero"),
    ]),
    Case("sglang mamba track indices", SGLANG_19190, "sglang", "0.5.9", "0.5.10", "sglang/srt/managers/schedule_batch.py", [
        Place((2015, 2022), (2146, 2166), "torch.tensor([per-request buffer entries], device=...) -> stack + gather on device, pinned index"),
        Place((2023, 2030), (2169, 2173), "torch.tensor([host bools], device=...) -> pinned CPU mask + non_blocking upload"),
    ]),
    Case("adv_optm OrthoGrad", ADV_OPTM_5, "adv_optm", "1.2.5", "1.2.6", "adv_optm/util/OrthoGrad.py", [
        Place((12, 12), (12, 12), "g.sub(w, alpha=proj) with a 0-d CUDA tensor as alpha (implicit item) -> g.sub(w * proj)"),
    ]),
    Case("adv_optm Prodigy d estimates", ADV_OPTM_5, "adv_optm", "1.2.5", "1.2.6", "adv_optm/optim/Prodigy_adv.py", [
        Place((460, 460), (463, 463), "d_numerator += ... torch.dot(...).item() per parameter -> accumulate on device"),
        Place((464, 464), (467, 467), "d_denom += s.abs().sum().item() per parameter -> accumulate on device"),
        Place((518, 518), (519, 519), "torch.tensor([host floats], device=device) -> torch.stack of the device accumulators"),
    ]),
    Case("lightning training loop loss", LIGHTNING_1254, "pytorch-lightning", "0.7.1", "0.7.3", "pytorch_lightning/trainer/training_loop.py", [
        Place((569, 569), (610, 610), "batch_loss_value += loss.item() every batch -> TensorRunningAccum.append(loss)"),
    ]),
    Case("fastvideo training pipeline", FASTVIDEO_1217, "fastvideo", "0.1.7", "0.2.0", "fastvideo/training/training_pipeline.py", [
        Place((262, 263), (249, 253), "latents.to(device, dtype) blocking H2D per batch -> non_blocking=True"),
        Place((264, 265), (254, 258), "encoder_hidden_states.to(device, dtype) -> non_blocking=True"),
        Place((266, 267), (259, 263), "encoder_attention_mask.to(device, dtype) -> non_blocking=True"),
        Place((461, 461), (430, 430), "total_loss += avg_loss.item() per micro-batch -> accumulate on device, read once per step"),
    ]),
]

TRIALS = {2: CASES, 3: CASES_3, 4: CASES_4}


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def fetch(package: str, version: str, path: str) -> Path:
    """The file `path` of package==version, extracted under .trials/src (downloaded once)."""
    out = CACHE / "src" / f"{package}-{version}" / path
    if out.exists():
        return out
    dist_dir = CACHE / "dist" / f"{package}-{version}"
    if not any(dist_dir.glob("*")):
        # --no-build-isolation: an sdist only needs its metadata read, with the torch installed here.
        run([str(BIN / "pip"), "download", "--no-deps", "--no-build-isolation", "-q", "-d", str(dist_dir),
             *BINARY_ONLY.get(package, []), f"{package}=={version}"])
    (archive,) = [p for p in dist_dir.iterdir() if p.suffix in (".whl", ".gz")]
    out.parent.mkdir(parents=True, exist_ok=True)
    if archive.suffix == ".whl":
        out.write_bytes(zipfile.ZipFile(archive).read(path))
    else:  # sdist: <name>-<version>/<path>
        with tarfile.open(archive) as tar:
            out.write_bytes(tar.extractfile(f"{archive.name[:-len('.tar.gz')]}/{path}").read())
    return out


def lint(file: Path, select_all: bool) -> list[dict]:
    config = CACHE / "h2dlint.toml"  # empty: default settings
    config.touch()
    cmd = [str(BIN / "h2dlint"), "check", str(file), "--config", str(config),
           "--output-format", "json", "--no-cache", "--exit-zero"]
    if select_all:
        cmd += ["--select", "ALL"]
    return json.loads(run(cmd).stdout)


def codes_at(findings: list[dict], lines: tuple[int, int]) -> str:
    lo, hi = lines
    hits = sorted({f"{f['code']}@{f['location']['row']}" for f in findings
                   if f["location"]["row"] <= hi and f["end_location"]["row"] >= lo})
    return ",".join(hits) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trial", type=int, choices=sorted(TRIALS), default=2, help="which trial's cases to run (default: 2)")
    cases = TRIALS[parser.parse_args().trial]
    start = time.time()
    rows, found = [], {"default": 0, "ALL": 0}
    quiet_after = {"default": 0, "ALL": 0}
    other = []
    for case in cases:
        before = fetch(case.package, case.before, case.path)
        after = fetch(case.package, case.after, case.path)
        res = {(side, mode): lint(f, mode == "ALL")
               for side, f in (("before", before), ("after", after)) for mode in ("default", "ALL")}
        place_lines = set()
        for place in case.places:
            cells = {}
            for mode in ("default", "ALL"):
                cells[mode] = codes_at(res["before", mode], place.before)
                cells["after " + mode] = codes_at(res["after", mode], place.after)
                found[mode] += cells[mode] != "-"
                quiet_after[mode] += cells["after " + mode] == "-"
            place_lines.update(range(place.before[0], place.before[1] + 1))
            rows.append((case.name, f"{place.before[0]}-{place.before[1]}", cells, place.note))
        # Findings elsewhere in the before file (not at a fixed place), for context.
        n_other = {m: sum(1 for f in res["before", m] if not place_lines & set(range(f["location"]["row"], f["end_location"]["row"] + 1)))
                   for m in ("default", "ALL")}
        other.append((case, n_other))

    n = len(rows)
    print(f"{'case':42} {'lines':>11}  {'default':14} {'ALL':22} {'after default':14} {'after ALL':14} note")
    for name, lines, c, note in rows:
        print(f"{name:42} {lines:>11}  {c['default']:14} {c['ALL']:22} {c['after default']:14} {c['after ALL']:14} {note}")
    print()
    for case, n_other in other:
        print(f"{case.package} {case.before}->{case.after} {case.path}: {case.pr}")
        print(f"    findings elsewhere in the before file: default {n_other['default']}, ALL {n_other['ALL']}")
    print()
    print(f"fixed places found: default: {found['default']}/{n}, ALL: {found['ALL']}/{n}")
    print(f"after file quiet at the replacement: default: {quiet_after['default']}/{n}, ALL: {quiet_after['ALL']}/{n}")
    dists = {CACHE / "dist" / f"{c.package}-{v}" for c in cases for v in (c.before, c.after)}
    size = sum(p.stat().st_size for d in dists for p in d.iterdir() if p.is_file())
    print(f"downloads for this trial, cached in {CACHE.relative_to(ROOT)}/dist: {size / 2**20:.0f} MiB; took {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
