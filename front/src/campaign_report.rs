//! A simulator campaign as the command line reports it: its failing seeds written as seeded
//! scenarios, its printed summary (with the story of its first failing seed), and the merge of
//! a sharded campaign's `--json` outputs.

use crate::files;
use crate::Error;
use leasehold_sim::seeded::campaign::{Campaign, CampaignReport, Saved};
use leasehold_sim::seeded::seeded_file::{first_violation_story, scenario_of, to_toml};
use leasehold_sim::seeded::summary::FirstFailure;
use leasehold_sim::seeded::Summary;
use leasehold_sim::timeline;
use std::path::{Path, PathBuf};

/// Writes the smallest failing seed of each broken invariant as a seeded scenario under `out` (the
/// variant's expected invariant first: a seed that breaks it is saved expecting it).
pub fn save_failures(
    out: &Path,
    campaign: &Campaign,
    summary: &Summary,
) -> Result<Vec<Saved>, Error> {
    let expected = campaign.template.variant.expected_violation();
    let mut order: Vec<_> = summary.failures.iter().collect();
    order.sort_by_key(|(invariant, _)| Some(**invariant) != expected);
    let mut saved: Vec<Saved> = Vec::new();
    for (invariant, failures) in order {
        let Some(&seed) = failures.seeds.first() else {
            continue;
        };
        if saved.iter().any(|s| s.seed == seed) {
            continue;
        }
        let setup = campaign.setup(seed);
        let note = format!("found by: {}", campaign.seed_command(seed));
        let scenario = scenario_of(&setup, Some(invariant.id()), Some(note));
        let stem = format!("{}-seed{seed}", setup.variant);
        let path = files::write_new(out, &stem, "toml", to_toml(&scenario).as_bytes())?;
        saved.push(Saved {
            seed,
            invariant: *invariant,
            path: path.display().to_string(),
        });
    }
    Ok(saved)
}

/// The printed summary of a campaign: its report, a replay command per saved seed, the timeline
/// of its first failing seed up to that failure, and what its backend says of itself.
pub fn report_text(campaign: &Campaign, report: &CampaignReport) -> String {
    let mut text = report.to_string();
    let backend_flags = campaign.backend.flags();
    for saved in &report.saved {
        text.push_str(&format!(
            "{} seed {}: replay with: leasehold replay {}{backend_flags}   (or: {})\n",
            saved.invariant.id(),
            saved.seed,
            saved.path,
            campaign.seed_command(saved.seed)
        ));
    }
    if let Some(first) = &report.summary.first_failure {
        text.push_str(&failure_story(campaign, first));
    }
    if let Some(line) = campaign.backend.describe() {
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// The smallest failing seed, re-run up to the step that found its first violation, its
/// timeline streamed and only its end kept: the lines before that violation. The re-run must
/// find the campaign's first violation again, or determinism is broken.
fn failure_story(campaign: &Campaign, first: &FirstFailure) -> String {
    const CONTEXT_LINES: usize = 8;
    let seed = first.seed;
    let setup = campaign.setup(seed);
    let story = first_violation_story(&setup, &campaign.backend, CONTEXT_LINES);
    let Some(story) = story.filter(|s| first.violations.first() == Some(&s.found.violation)) else {
        return format!("seed {seed} did not fail the same way when re-run: the run is not deterministic (a bug: please report it)\n");
    };
    let mut out = format!("timeline of seed {seed} up to its first violation:\n");
    for line in &story.lines {
        out.push_str(&format!("  {line}\n"));
    }
    out.push_str(&format!(
        "  → {}\n",
        timeline::violation_text_at(&story.found, story.t, &story.told)
    ));
    out
}

/// The merge of a sharded campaign's `--json` outputs (the files of its shards 1/n … n/n), and
/// how many there were.
pub fn merge(paths: &[PathBuf]) -> Result<(CampaignReport, usize), Error> {
    let mut parts = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error(format!("{}: cannot read: {e}", path.display())))?;
        let part: CampaignReport = serde_json::from_str(&text).map_err(|e| {
            Error(format!(
                "{}: not a `leasehold sim --json` campaign output: {e}",
                path.display()
            ))
        })?;
        parts.push(part);
    }
    let merged = CampaignReport::merge(&parts).map_err(|e| Error(format!("--merge: {e}")))?;
    Ok((merged, parts.len()))
}

/// The printed summary of a merged campaign of `shards` shards.
pub fn merged_text(merged: &CampaignReport, shards: usize) -> String {
    let mut text = format!("{}\nmerged from {shards} shards\n{merged}", merged.command);
    for saved in &merged.saved {
        text.push_str(&format!(
            "{} seed {}: replay with: leasehold replay {}\n",
            saved.invariant.id(),
            saved.seed,
            saved.path
        ));
    }
    text
}
