"""Hugging Face GPT-2 weights and Garg et al.'s run directories, against a Hugging Face model built locally in
Garg et al.'s layout (``garg_reference``): equal predictions."""
import json

import pytest
import torch
import yaml
from click.testing import CliRunner

pytest.importorskip("transformers")

import icl_sim  # noqa: E402
from garg_reference import GargTransformer  # noqa: E402
from icl_sim.cli import cli  # noqa: E402
from icl_sim.models.gpt import GPT, GPTConfig  # noqa: E402
from icl_sim.models.hf_gpt2 import from_hf_gpt2, save_garg_checkpoint, to_hf_gpt2  # noqa: E402
from icl_sim.seeding import make_generator  # noqa: E402
from icl_sim.tasks import make_task  # noqa: E402

DIM, POINTS, N_EMBD, N_LAYER, N_HEAD = 5, 11, 32, 3, 4
TASK = make_task("linear-regression", dim=DIM, points=POINTS)


def garg_model(seed: int) -> GargTransformer:
    """Garg et al.'s TransformerModel with random weights (HF's own init, then every weight perturbed)."""
    torch.manual_seed(seed)
    model = GargTransformer(DIM, POINTS, N_EMBD, N_LAYER, N_HEAD)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    return model.eval()


def prompt():
    return TASK.sample(64, make_generator(3, "eval"))


def write_garg_run(theirs: GargTransformer, run_dir) -> None:
    """``theirs`` saved as Garg et al.'s train.py saves a run: config.yaml and state.pt."""
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"model": {
        "family": "gpt2", "n_dims": DIM, "n_positions": POINTS, "n_embd": N_EMBD, "n_layer": N_LAYER,
        "n_head": N_HEAD}, "training": {"task": "linear_regression", "batch_size": 64}}))
    state = {f"_read_in.{k}": v for k, v in theirs.read_in.state_dict().items()}
    state.update({f"_backbone.{k}": v for k, v in theirs.backbone.state_dict().items()})
    state.update({f"_read_out.{k}": v for k, v in theirs.read_out.state_dict().items()})
    torch.save({"model_state_dict": state, "train_step": 500000}, run_dir / "state.pt")


def test_a_garg_run_directory_loads_with_equal_predictions(tmp_path):
    theirs = garg_model(0)
    write_garg_run(theirs, tmp_path)
    ours = icl_sim.load_garg_checkpoint(tmp_path)
    batch = prompt()
    with torch.no_grad():
        torch.testing.assert_close(ours(batch.xs, batch.ys), theirs(batch.xs, batch.ys), rtol=1e-5, atol=1e-5)


def test_a_saved_garg_checkpoint_is_read_by_their_model_and_loads_back(tmp_path):
    """save_garg_checkpoint writes our gpt in Garg et al.'s layout: their TransformerModel, given state.pt as their
    train.py saves it (``_read_in``, ``_backbone``, ``_read_out``), predicts as ours; so does the model read back."""
    torch.manual_seed(4)
    ours = GPT(DIM, POINTS, GPTConfig(n_embd=N_EMBD, n_layer=N_LAYER, n_head=N_HEAD, activation="gelu-tanh")).eval()
    save_garg_checkpoint(ours, tmp_path)
    theirs = GargTransformer(DIM, POINTS, N_EMBD, N_LAYER, N_HEAD).eval()
    state = torch.load(tmp_path / "state.pt", weights_only=True)["model_state_dict"]
    for prefix, module in (("_read_in.", theirs.read_in), ("_backbone.", theirs.backbone),
                           ("_read_out.", theirs.read_out)):
        missing, _ = module.load_state_dict({name[len(prefix):]: value for name, value in state.items()
                                             if name.startswith(prefix)}, strict=False)
        assert missing in ([], ["wte.weight"]), missing  # GPT-2's token embedding is never read
    batch = prompt()
    with torch.no_grad():
        torch.testing.assert_close(theirs(batch.xs, batch.ys), ours(batch.xs, batch.ys), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(icl_sim.load_garg_checkpoint(tmp_path)(batch.xs, batch.ys), ours(batch.xs, batch.ys))
    with pytest.raises(ValueError, match="activation 'gelu'"):
        save_garg_checkpoint(GPT(DIM, POINTS, GPTConfig(n_embd=8, n_layer=1, n_head=2, activation="gelu")), tmp_path)


def test_to_hf_gpt2_makes_a_gpt2_model_compute_ours_and_from_hf_gpt2_inverts_it():
    ours = GPT(DIM, POINTS, GPTConfig(n_embd=N_EMBD, n_layer=N_LAYER, n_head=N_HEAD, activation="gelu-tanh")).eval()
    theirs = GargTransformer(DIM, POINTS, N_EMBD, N_LAYER, N_HEAD).eval()
    missing, unexpected = theirs.backbone.load_state_dict(to_hf_gpt2(ours), strict=False)
    assert unexpected == [] and {name for name in missing if not name.endswith((".attn.bias", ".attn.masked_bias"))
                                 } == {"wte.weight"}
    theirs.read_in.load_state_dict(ours.embedding.read_in.state_dict())
    theirs.read_out.load_state_dict(ours.head.read_out.state_dict())
    batch = prompt()
    with torch.no_grad():
        torch.testing.assert_close(theirs(batch.xs, batch.ys), ours(batch.xs, batch.ys), rtol=1e-5, atol=1e-5)
    back = from_hf_gpt2(to_hf_gpt2(ours), ours.embedding.read_in.state_dict(), ours.head.read_out.state_dict(),
                        n_head=N_HEAD)
    for (name, value), (other, original) in zip(back.state_dict().items(), ours.state_dict().items()):
        assert name == other and torch.equal(value, original), name


@pytest.mark.parametrize("files, message", [
    ({}, "config.yaml is missing"),
    ({"config.yaml": "model: {family: lstm}\n"}, "only Garg et al.'s gpt2 models"),
    ({"config.yaml": "model: {family: gpt2, n_dims: 5}\n"}, "lacks n_positions, n_embd, n_layer, n_head"),
    ({"config.yaml": "model: {family: gpt2, n_dims: 5, n_positions: 11, n_embd: 32, n_layer: 3, n_head: 4}\n"},
     "state.pt is missing"),
])
def test_a_foreign_run_directory_is_one_line(tmp_path, files, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match=message):
        icl_sim.load_garg_checkpoint(tmp_path)


def test_eval_and_probe_read_a_garg_run_directory(tmp_path):
    write_garg_run(garg_model(1), tmp_path)
    for command in (["eval", str(tmp_path), "--num-prompts", "64", "--device", "cpu"],
                    ["probe", str(tmp_path), "--algorithm", "gd", "--steps", "3", "--num-prompts", "32",
                     "--device", "cpu"],
                    ["probe-latent", str(tmp_path), "--latent", "w", "--num-fit", "64", "--num-prompts", "32",
                     "--device", "cpu"]):
        result = CliRunner().invoke(cli, [*command, "--checkpoint-format", "garg"])
        assert result.exit_code == 0, result.output
    records = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert {"gpt (Garg et al.'s checkpoint) (trained)", "OLS"} <= {record["predictor"] for record in records}
    assert {record["layer"] for record in json.loads((tmp_path / "probe" / "gd.json").read_text())} == {1, 2, 3}
    assert {record["layer"] for record in json.loads((tmp_path / "probe" / "latent-w.json").read_text())} >= {1, 2, 3}
