"""The compile's shortcuts give what the long way gives (issue 66 item 5: the CPU a job's
document and its root's files cost): the shape verdict an ASL carries from where it was rendered
(contract/asl_shape.py ``ShapedAsl``) and the first claim's JSONata made once per policy
(compiler/asl.py ``_claim_text``). The compiled bytes are unchanged by construction; the 5,000-
and 1,500-job benches' outputs were compared file by file when they came in."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import ROOT
from jobplane.compiler import asl, definitions, jsonata, terraform
from jobplane.compiler.blackouts import job_windows
from jobplane.compiler.validate import load_jobs
from jobplane.contract import asl_shape, policies
from jobplane.contract.bindings import bind_for_terraform, has_directive, terraform_escape, unbind_terraform
from jobplane.contract.config import load_config


def test_each_examples_asl_carries_its_shape_verdict_through_its_template_and_back() -> None:
    config = load_config(ROOT)
    escaped = 0
    for lj in load_jobs(config):
        definition = asl.build_definition(lj.job, config.name_prefix, config.pools, job_windows(lj.job, config))
        text = asl.render(definition)
        assert type(text) is asl_shape.ShapedAsl and asl_shape.shape_problem(str(text)) is None
        doc = terraform.job_module(lj.job, text, config)
        (machine,) = doc["resource"]["aws_sfn_state_machine"].values()
        assert type(machine["definition"]) is asl_shape.ShapedTemplate
        back = definitions.asl_of_document(doc)
        assert back == text, lj.job.name
        if type(back) is not asl_shape.ShapedAsl:
            # read back the long way (its text holds a Terraform sequence, escaped): no verdict told
            escaped += 1
            assert type(back) is str and ("%{" in machine["definition"] or "$${" in machine["definition"])
    assert escaped < 3  # the examples' jobs are read back the short way but for user text like "${x}"


def _state(type_: object = "Pass") -> dict[str, Any]:
    return {"Type": type_, "End": True}


@pytest.mark.parametrize("definition", [
    {"StartAt": "a", "States": {}},
    {"StartAt": "b", "States": {"a": _state()}},
    {"StartAt": "a", "States": {"a": _state("Nope")}},
    {"StartAt": "a", "States": {"a": [_state()]}},
    {"StartAt": None, "States": {"a": _state()}},
    {"StartAt": "1", "States": {1: _state()}},  # a key JSON turns into "1": the parse passes, the dict would not
    {"StartAt": 1, "States": {"1": _state()}},
    {"States": {"a": _state()}},
])
def test_a_definition_the_check_may_refuse_is_rendered_plain_and_checked_when_asked(definition: dict[str, Any]) -> None:
    text = asl_shape.dumps_shaped(definition, separators=(",", ":"))
    assert type(text) is str
    assert asl_shape.shape_problem(text) == asl_shape.shape_problem(str(text))
    # a plain ASL's template is plain too: nothing is told without the check
    template = bind_for_terraform(text, {})
    assert type(template) is str and unbind_terraform(template, {}) == text


def test_a_sound_definition_is_shaped_and_its_verdict_is_the_parses() -> None:
    text = asl_shape.dumps_shaped({"StartAt": "a", "States": {"a": _state(), "b": _state("Choice")}})
    assert type(text) is asl_shape.ShapedAsl
    assert asl_shape.shape_problem(text) is None and asl_shape.shape_problem(str(text)) is None
    assert type(text[1:]) is str and type(text.replace("a", "b")) is str  # new texts are plain


@pytest.mark.parametrize("policy", list(policies.Policy))
def test_the_first_claims_text_is_the_claims_translation_for_any_name(policy: policies.Policy) -> None:
    of = policies.of(policy)
    for job, team in [("nightly-report", "billing"), ('q"uo\\te\n\x00job\x00', "t\u00e9am\u2028\x00team\x00"), ("", "")]:
        assert asl._claim_text(of, job, team) == jsonata.template(asl.claim_update(job, team, of))


@pytest.mark.parametrize("text", ["", "%", "%{", "a%b%{c", "{% $x %}", "%%", "x%", "%%{", "${x}", "{%%{%}"])
def test_a_template_directive_is_told_as_the_pair_itself_tells_it(text: str) -> None:
    assert has_directive(text) == ("%{" in text)
    assert terraform_escape(text) == text.replace("${", "$${").replace("%{", "%%{")
