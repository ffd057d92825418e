//! `image-digest-drift` (error).
//!
//! # What it detects
//! One image reference (the same `image` string in the pod spec, not pinned by digest) ran as
//! different digests (`status.containerStatuses[].imageID`) in the pods of a rollout: within
//! one revision, or across revisions. Reported once per rollout, image and new digest.
//!
//! # Why it matters
//! The tag moved: the canary verified one build and other pods run another. Within one revision
//! the rollout's pods are no longer identical; across revisions a "config-only" restart or a
//! rollback silently shipped new code.
//!
//! # Example
//! `checkout-api:1.42.0` ran as `sha256:9f2c…` in `checkout-api-5d98c7bf64-x7k2p` (the canary)
//! and as `sha256:41aa…` in `checkout-api-5d98c7bf64-q8w3z`, created after promotion.

use std::collections::{BTreeMap, BTreeSet};

use rf_format::{Kind, Timestamp};

use crate::detectors::image_not_pinned::pinned;
use crate::detectors::{Detector, Facts, Scene};
use crate::finding::{Evidence, Finding, Rule, Subject};
use crate::rollout::At;
use crate::world::{Touched, revision_of};

/// The first pod seen with a digest.
#[derive(Debug, Clone)]
struct Seen {
    pod: String,
    revision: String,
    pos: At,
}

type ImageKey = (String, String, String);

#[derive(Debug, Default)]
pub(crate) struct ImageDigestDrift {
    /// (namespace, rollout, image) -> digest -> first pod that ran it.
    digests: BTreeMap<ImageKey, BTreeMap<String, Seen>>,
    fired: BTreeSet<(String, String, String, String)>,
}

/// Digests remembered per image; a tag that moved more often than this is reported anyway.
const KEEP_DIGESTS: usize = 8;

fn short(d: &str) -> &str {
    d.get(..19).unwrap_or(d)
}

impl Detector for ImageDigestDrift {
    fn on_world(
        &mut self,
        s: &Scene<'_>,
        _facts: &mut Facts,
        out: &mut Vec<Finding>,
    ) -> Option<Timestamp> {
        let Some(Touched::Pod { namespace, name }) = s.touched else {
            return None;
        };
        let track = s.track;
        let pod = s.world.pod(namespace, name)?;
        let revision = revision_of(track, name, Some(pod))?;
        for img in &pod.images {
            let Some(digest) = &img.digest else { continue };
            if pinned(&img.image) {
                continue;
            }
            let key = (
                track.namespace.clone(),
                track.name.clone(),
                img.image.clone(),
            );
            let seen = self.digests.entry(key).or_default();
            if seen.contains_key(digest) {
                continue;
            }
            let first = seen
                .values()
                .min_by_key(|v| (v.pos.file, v.pos.seq))
                .cloned();
            if seen.len() < KEEP_DIGESTS {
                seen.insert(
                    digest.clone(),
                    Seen {
                        pod: name.clone(),
                        revision: revision.clone(),
                        pos: pod.pos,
                    },
                );
            }
            let Some(first) = first else { continue };
            let other_digest = self.digests[&(
                track.namespace.clone(),
                track.name.clone(),
                img.image.clone(),
            )]
                .iter()
                .find(|(_, v)| v.pod == first.pod && v.pos == first.pos)
                .map(|(d, _)| d.clone())
                .unwrap_or_default();
            if !self.fired.insert((
                track.namespace.clone(),
                track.name.clone(),
                img.image.clone(),
                digest.clone(),
            )) {
                continue;
            }
            let scope = if first.revision == revision {
                format!("within revision {revision}")
            } else {
                format!("across revisions {} and {revision}", first.revision)
            };
            let ns = &track.namespace;
            out.push(
                Finding::new(
                    Rule::ImageDigestDrift,
                    track.subject(),
                    track.subject(),
                    pod.pos.at,
                    format!(
                        "image {} ran as two digests {scope}: {} in {} and {} in {name}",
                        img.image,
                        short(&other_digest),
                        first.pod,
                        short(digest)
                    ),
                )
                .explain(format!(
                    "The tag of {} was moved while the rollout ran: pod {} (revision {}) pulled {other_digest}, pod {name} (revision {revision}) pulled {digest}. What the canary verified is not what all pods run.",
                    img.image, first.pod, first.revision
                ))
                .with_evidence([
                    Evidence::of(first.pos, Subject::new(Kind::Pod, ns, &first.pod), format!("container runs {other_digest}")),
                    Evidence::of(pod.pos, Subject::new(Kind::Pod, ns, name), format!("container {} runs {digest}", img.container)),
                ])
                .remedy(
                    "Decide which build should run, pin it by digest in the manifest, and roll out again; until then treat the release as unverified.".to_owned(),
                    vec![format!(
                        "kubectl -n {ns} get pods -l rollouts-pod-template-hash={revision} -o jsonpath='{{range .items[*]}}{{.metadata.name}}{{\"\\t\"}}{{.status.containerStatuses[*].imageID}}{{\"\\n\"}}{{end}}'"
                    )],
                    "Deploy by digest (repo:tag@sha256:...) and make release tags immutable in the registry.".to_owned(),
                ),
            );
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::Rule;
    use crate::testkit::{Kit, digest, template_unpinned};

    fn drift(report: &crate::Report) -> Vec<&crate::Finding> {
        report
            .findings
            .iter()
            .filter(|f| f.rule == Rule::ImageDigestDrift)
            .collect()
    }

    #[test]
    fn a_moved_tag_within_one_revision_is_reported() {
        let mut kit = Kit::new();
        kit.release_to_pause("a", template_unpinned("r/app:2", "c1"));
        kit.pod("a", "p0", true, "r/app:2", &digest("build-1"));
        kit.advance(60);
        kit.pod("a", "p1", true, "r/app:2", &digest("build-1"));
        kit.pod("a", "p2", true, "r/app:2", &digest("build-2"));
        let report = kit.finish();
        let f = drift(&report);
        assert_eq!(f.len(), 1, "{:#?}", report.findings);
        assert!(
            f[0].summary.contains("within revision a"),
            "{}",
            f[0].summary
        );
        assert!(
            f[0].summary.contains("checkout-api-a-p0")
                && f[0].summary.contains("checkout-api-a-p2")
        );
    }

    #[test]
    fn across_revisions_too() {
        let mut kit = Kit::new();
        kit.pod("stable0", "s0", true, "r/app:1", &digest("old"));
        kit.release_to_pause("a", template_unpinned("r/app:1", "c1"));
        kit.pod("a", "p0", true, "r/app:1", &digest("new"));
        let report = kit.finish();
        let f = drift(&report);
        assert_eq!(f.len(), 1, "{:#?}", report.findings);
        assert!(
            f[0].summary.contains("across revisions stable0 and a"),
            "{}",
            f[0].summary
        );
    }

    #[test]
    fn same_digest_everywhere_or_pinned_images_are_fine() {
        let mut kit = Kit::new();
        kit.release_to_pause("a", template_unpinned("r/app:2", "c1"));
        kit.pod("a", "p0", true, "r/app:2", &digest("b1"));
        kit.pod("a", "p1", true, "r/app:2", &digest("b1"));
        let pinned = format!("r/app:3@{}", digest("x"));
        kit.pod("a", "p2", true, &pinned, &digest("y"));
        kit.pod("a", "p3", true, &pinned, &digest("z"));
        let report = kit.finish();
        assert!(drift(&report).is_empty(), "{:#?}", report.findings);
    }
}
