//! Who wrote a restart's pod template, as the evidence shows it (the change's field manager,
//! the paths it touched), and what that means for what to do now and what prevents it: the
//! restart rules choose their remedy here, not from the incident they were first written for.

use crate::base::time::human_duration;
use crate::model::rollout::SpecChange;

/// Two renders closer than this are "in quick succession": one render too many
/// (`double-render`'s window).
pub(crate) const QUICK_SECONDS: i64 = 120;

/// The writer of a pod-template change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Writer {
    /// Stakater Reloader (field manager `Reloader`, or its `STAKATER_` env var or
    /// `reloader.stakater.com` annotation in the change): a ConfigMap or Secret it watches
    /// changed.
    Reloader,
    /// Flux's helm-controller: a Helm upgrade of a HelmRelease.
    FluxHelm,
    /// Argo CD, or Flux's kustomize-controller: a sync or apply of a Git revision.
    GitOps(String),
    /// Any other field manager (a person's kubectl, a script, an image updater).
    Other(String),
    /// No field manager or audit record names it.
    Unknown,
}

impl Writer {
    /// The writer of `change`.
    pub fn of(change: &SpecChange) -> Writer {
        let reloader_path = change
            .paths
            .iter()
            .any(|p| p.contains("STAKATER_") || p.contains("reloader.stakater.com"));
        let Some(actor) = change.actor.as_deref() else {
            return if reloader_path {
                Writer::Reloader
            } else {
                Writer::Unknown
            };
        };
        let lower = actor.to_ascii_lowercase();
        if lower.contains("reloader") || reloader_path {
            Writer::Reloader
        } else if lower == "helm-controller" {
            Writer::FluxHelm
        } else if lower.starts_with("argocd") || lower == "kustomize-controller" {
            Writer::GitOps(actor.to_owned())
        } else {
            Writer::Other(actor.to_owned())
        }
    }
}

/// A pod-template annotation whose value is made at render time: a random string
/// (`rollme: {{ randAlphaNum 5 }}`) or a time (`.Release.Time`, a build timestamp), by its key.
pub(crate) fn per_render_key(path: &str) -> Option<String> {
    let key = path
        .rsplit_once("annotations")
        .map(|(_, k)| {
            k.trim_start_matches(['.', '[', '"'])
                .trim_end_matches([']', '"'])
                .to_owned()
        })
        .filter(|k| !k.is_empty())?;
    let lower = key.to_ascii_lowercase();
    let words = [
        "rollme",
        "timestamp",
        "date",
        "time",
        "deployed",
        "random",
        "now",
    ];
    let per_render = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| words.contains(&w))
        || ["timestamp", "deployedat", "releasetime", "buildtime"]
            .iter()
            .any(|w| lower.contains(w));
    per_render.then_some(key)
}

/// What a restart's remedy says, chosen by the writer of the template change that made it.
#[derive(Debug, Clone)]
pub(crate) struct Story {
    /// One sentence for the explanation: who wrote it and what that means.
    pub why: String,
    /// What to do now.
    pub now: String,
    /// What prevents it.
    pub prevent: String,
    /// The writer is the seed's: a pipeline or GitOps render (the default texts apply).
    pub render_race: bool,
}

/// The story of a restart made by `render` (the change that wrote the new template), after
/// `previous` (the change before it). `what` is `canary` or `preview`; `to` the new revision;
/// `same_input` is true when both renders are known to come from the same input (one Git
/// revision of one Application).
pub(crate) fn story(
    render: Option<&SpecChange>,
    previous: Option<&SpecChange>,
    what: &str,
    to: &str,
    same_input: bool,
) -> Story {
    story_with(render, previous, &[], what, to, same_input)
}

/// [`story`], with `paths` the two templates are known to differ in (a comparison of the
/// revisions' templates) besides those of `render`.
pub(crate) fn story_with(
    render: Option<&SpecChange>,
    previous: Option<&SpecChange>,
    paths: &[String],
    what: &str,
    to: &str,
    same_input: bool,
) -> Story {
    let reloader_path = paths
        .iter()
        .any(|p| p.contains("STAKATER_") || p.contains("reloader.stakater.com"));
    let writer = match render.map_or(Writer::Unknown, Writer::of) {
        Writer::Unknown | Writer::GitOps(_) | Writer::Other(_) if reloader_path => Writer::Reloader,
        w => w,
    };
    let per_render = render
        .map(|r| r.paths.as_slice())
        .unwrap_or_default()
        .iter()
        .chain(paths)
        .find_map(|p| per_render_key(p));
    let gap = match (render, previous) {
        (Some(r), Some(p)) => Some(r.pos.at.0 - p.pos.at.0),
        _ => None,
    };
    if writer == Writer::Reloader {
        return Story {
            why: format!(
                "The new template was written by Stakater Reloader{}: a ConfigMap or Secret the rollout mounts or names changed, and Reloader's default strategy for Argo Rollouts writes the pod template, which starts a new revision and restarts the {what}.",
                render
                    .and_then(|r| r.actor.as_deref())
                    .map(|a| format!(" (field manager {a})"))
                    .unwrap_or_default()
            ),
            now: format!(
                "This restart is Reloader's, not a pipeline's: re-running a pipeline neither causes nor cures it. Let the {what} on {to}, which runs the changed config, progress; abort it if that config change was not meant to go out during this release."
            ),
            prevent: "Annotate the Rollout reloader.stakater.com/rollout-strategy: \"restart\" so Reloader sets spec.restartAt (the pods restart in place and no new revision starts), or change the ConfigMaps and Secrets Reloader watches only when no release is in progress.".to_owned(),
            render_race: false,
        };
    }
    if let Some(key) = per_render {
        let proof = if same_input {
            format!(
                "Both renders came from the same input, and the annotation {key} still changed: its value is made at render time, so every sync writes a new pod template."
            )
        } else {
            format!(
                "The annotation {key} is one whose value is made at render time (a random string or a time): every render writes a new pod template even when nothing it renders from changed."
            )
        };
        return Story {
            why: proof,
            now: format!(
                "Do not sync or re-run again until the chart is fixed: each render restarts the {what} anew. Let the {what} on {to} progress."
            ),
            prevent: format!(
                "Remove the per-render value from the chart (a pod-template annotation such as {key}: {{{{ randAlphaNum 5 }}}}, now, .Release.Time or a build timestamp): a pod-template annotation must change only when its input does (a checksum of the config, a values field). The fix is in the chart, not in the values revision."
            ),
            render_race: false,
        };
    }
    if writer == Writer::FluxHelm && previous.is_some_and(|p| Writer::of(p) == Writer::FluxHelm) {
        return Story {
            why: "Both templates were written by Flux's helm-controller: two Helm upgrades of one HelmRelease, the second with other values (a ConfigMap or Secret of its valuesFrom changed after the first upgrade began, or the chart and its values came from sources that moved separately).".to_owned(),
            now: format!(
                "Do not re-run: the second Helm upgrade is the release. Let the {what} on {to} progress. The HelmRelease's history lists a Helm release only once its upgrade ends; until then its status.lastAttemptedRevision and lastAttemptedConfigDigest name the upgrade in progress."
            ),
            prevent: "Keep the values that change with a release in the same source revision as the chart (values in Git beside the chart, not a ConfigMap updated separately), or suspend the HelmRelease while its chart and its valuesFrom change together.".to_owned(),
            render_race: false,
        };
    }
    let quick = gap.is_none_or(|g| g <= QUICK_SECONDS * 1_000_000_000);
    match writer {
        Writer::Other(who) => Story {
            why: format!(
                "The new template was written by {who}{}.",
                gap.map(|g| format!(", {} after the change before it", human_duration(g)))
                    .unwrap_or_default()
            ),
            now: format!(
                "Find out why {who} changed the pod template during the release; let the {what} on {to} progress, or abort it if the change was a mistake."
            ),
            prevent: "Change a rollout's pod template only through its release (one render per release); a direct edit during a canary restarts it.".to_owned(),
            render_race: false,
        },
        _ if quick => Story {
            why: String::new(),
            now: format!(
                "Do not re-run the pipeline: every run renders twice and restarts the {what} again. Let the {what} on {to} progress, or abort it and do one clean run."
            ),
            prevent: "Render once per release: take the image tag and the values that feed checksum/config from the same Git revision (resolve the values revision before the image tag is written), and make the pipeline's wait reset its timer when status.currentPodHash changes.".to_owned(),
            render_race: true,
        },
        _ => Story {
            why: String::new(),
            now: format!(
                "A new render during the release restarted the {what}: let the {what} on {to} progress, or abort it if that render was not meant to ship."
            ),
            prevent: "Hold renders of a rollout while its release is in progress (an Application or HelmRelease sync window), or make the pipeline's wait reset its timer when status.currentPodHash changes.".to_owned(),
            render_race: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::per_render_key;

    #[test]
    fn per_render_annotations_are_known_by_their_keys() {
        for (path, key) in [
            ("metadata.annotations.rollme", Some("rollme")),
            ("metadata.annotations[\"deployed-at\"]", Some("deployed-at")),
            (
                "metadata.annotations.buildTimestamp",
                Some("buildTimestamp"),
            ),
            (
                "metadata.annotations[\"app.example.com/release-time\"]",
                Some("app.example.com/release-time"),
            ),
            ("metadata.annotations[\"checksum/config\"]", None),
            ("metadata.annotations[\"config-updated-by\"]", None),
            ("spec.containers[name=app].image", None),
        ] {
            assert_eq!(per_render_key(path).as_deref(), key, "{path}");
        }
    }

    use serde_json::json;

    use crate::Rule;
    use crate::testkit::{Kit, template};

    /// A release by `first` to its pause, then after `gap` seconds a second template by
    /// `second`, changed by `change`: the canary restarts.
    fn restart(
        first: &str,
        second: &str,
        gap: i64,
        change: impl FnOnce(&mut serde_json::Value),
    ) -> crate::Report {
        let mut kit = Kit::new();
        let time = |kit: &Kit| crate::base::time::rfc3339(kit.now());
        let tpl = template("app:2", "c1");
        kit.managed_fields(json!([{"manager": first, "operation": "Update", "time": time(&kit)}]));
        kit.release_to_pause("h1", tpl.clone());
        kit.advance(gap);
        let mut second_tpl = tpl;
        change(&mut second_tpl);
        kit.managed_fields(json!([{"manager": second, "operation": "Update", "time": time(&kit)}]));
        kit.new_revision("h2", second_tpl.clone());
        kit.advance(5);
        kit.scale("h2", 1, second_tpl);
        kit.advance(60);
        kit.finish()
    }

    fn of(report: &crate::Report, rule: Rule) -> &crate::Finding {
        report
            .findings
            .iter()
            .find(|f| f.rule == rule)
            .unwrap_or_else(|| panic!("no {rule}: {:#?}", report.findings))
    }

    #[test]
    fn issue_48_a_reloader_restart_names_reloader_and_its_remedy() {
        let report = restart("argocd-controller", "Reloader", 90, |t| {
            t["spec"]["containers"][0]["env"] =
                json!([{"name": "STAKATER_APP_CONFIG_CONFIGMAP", "value": "9f1c"}]);
        });
        let f = of(&report, Rule::RerenderRestart);
        assert!(
            f.explanation.contains("Stakater Reloader"),
            "{}",
            f.explanation
        );
        assert!(
            !f.remedy.summary.contains("Do not re-run the pipeline"),
            "{}",
            f.remedy.summary
        );
        assert!(
            f.remedy
                .prevention
                .contains("reloader.stakater.com/rollout-strategy"),
            "{}",
            f.remedy.prevention
        );
        assert!(
            !f.explanation.contains("re-render race"),
            "{}",
            f.explanation
        );
        let lost = of(&report, Rule::PauseLost);
        assert!(
            lost.remedy.prevention.contains("rollout-strategy"),
            "{}",
            lost.remedy.prevention
        );
    }

    #[test]
    fn issue_48_a_value_made_at_every_render_is_named_and_fixed_in_the_chart() {
        let report = restart("argocd-controller", "argocd-controller", 180, |t| {
            t["metadata"]["annotations"]["rollme"] = json!("x7Gq2");
        });
        let f = of(&report, Rule::RerenderRestart);
        assert!(
            !f.explanation.contains("quick succession"),
            "{}",
            f.explanation
        );
        assert!(f.explanation.contains("rollme"), "{}", f.explanation);
        assert!(
            f.remedy
                .prevention
                .contains("in the chart, not in the values revision"),
            "{}",
            f.remedy.prevention
        );
        let c = of(&report, Rule::ConfigOnlyRerender);
        assert!(
            c.remedy.prevention.contains("per-render value"),
            "{}",
            c.remedy.prevention
        );
    }

    #[test]
    fn issue_48_flux_upgrading_twice_says_so_instead_of_commit_together() {
        let report = restart("helm-controller", "helm-controller", 40, |t| {
            t["metadata"]["annotations"]["checksum/config"] = json!("c2");
        });
        let f = of(&report, Rule::RerenderRestart);
        assert!(
            f.explanation.contains("two Helm upgrades"),
            "{}",
            f.explanation
        );
        assert!(
            f.remedy.summary.contains("lastAttemptedConfigDigest"),
            "{}",
            f.remedy.summary
        );
        let d = of(&report, Rule::DoubleRender);
        assert!(
            !d.remedy
                .prevention
                .contains("commit values and config together"),
            "{}",
            d.remedy.prevention
        );
        let c = of(&report, Rule::ConfigOnlyRerender);
        assert!(
            !c.remedy
                .summary
                .contains("Nothing about the application changed"),
            "{}",
            c.remedy.summary
        );
    }

    #[test]
    fn the_render_race_keeps_its_remedy() {
        let report = restart("argocd-controller", "argocd-controller", 30, |t| {
            t["metadata"]["annotations"]["checksum/config"] = json!("c2");
        });
        let f = of(&report, Rule::RerenderRestart);
        assert!(
            f.explanation
                .contains("quick succession is the re-render race"),
            "{}",
            f.explanation
        );
        assert!(
            f.remedy.summary.starts_with("Do not re-run the pipeline"),
            "{}",
            f.remedy.summary
        );
    }
}
