//! `image-not-pinned` (warning).
//!
//! # What it detects
//! A container or init container of the rollout's pod template names its image by tag (or by
//! nothing at all, meaning `latest`) without an `@sha256:` digest. Reported once per rollout and
//! image, when the template is first seen with it.
//!
//! # Why it matters
//! A tag is a pointer that can move: the bytes verified in the canary are not necessarily the
//! bytes that the last pod of the rollout pulls, or that a rollback pulls tomorrow.
//! `image-digest-drift` reports when that happened.
//!
//! # Example
//! `registry.example.com/payments/checkout-api:1.42.0` in container `app` of
//! `payments/checkout-api`.

use std::collections::{BTreeSet, HashMap};

use crate::detectors::{Detector, argo};
use crate::diff::HASH_LABEL;
use crate::finding::{Finding, Rule};
use crate::rollout::Transition;

#[derive(Debug, Default)]
pub(crate) struct ImageNotPinned {
    /// The images reported, per rollout (namespace, name). Looked up on every transition, so
    /// by reference: nothing is copied for an image already reported.
    fired: HashMap<String, HashMap<String, BTreeSet<String>>>,
}

/// True when `image` names a digest.
pub(crate) fn pinned(image: &str) -> bool {
    image.contains("@sha256:") || image.contains("@sha512:")
}

impl Detector for ImageNotPinned {
    fn on_transition(&mut self, t: &Transition<'_>, out: &mut Vec<Finding>) {
        let track = t.track;
        for image in track.images.iter().filter(|i| !pinned(i)) {
            let reported = self
                .fired
                .get(&track.namespace)
                .and_then(|by_name| by_name.get(&track.name))
                .is_some_and(|images| images.contains(image));
            if reported {
                continue;
            }
            self.fired
                .entry(track.namespace.clone())
                .or_default()
                .entry(track.name.clone())
                .or_default()
                .insert(image.clone());
            let hash = t.cur.pod_hash.as_deref().unwrap_or("<hash>");
            out.push(
                Finding::new(
                    Rule::ImageNotPinned,
                    track.subject(),
                    track.subject(),
                    t.cur.pos.at,
                    format!("image {image} is referenced by tag, not by digest"),
                )
                .explain(format!(
                    "The rollout's pod template runs {image}. A tag can be moved to other bytes at any time: pods created later (a scale-up, a restart, a rollback) can run an image nobody verified."
                ))
                .with_evidence([track.evidence(t.cur.pos, format!("pod template image {image}"))])
                .remedy(
                    "Find the digest the running pods use and pin it.".to_owned(),
                    vec![
                        format!(
                            "kubectl -n {} get pods -l {HASH_LABEL}={hash} -o jsonpath='{{range .items[*]}}{{.metadata.name}}{{\"\\t\"}}{{.status.containerStatuses[*].imageID}}{{\"\\n\"}}{{end}}'",
                            track.namespace
                        ),
                        format!("kubectl argo rollouts get rollout {}", argo(track)),
                    ],
                    "Deploy images as repo:tag@sha256:<digest> (an image updater or CI can write the digest), so what was verified is what runs.".to_owned(),
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Rule;
    use crate::testkit::{Kit, template, template_unpinned};

    #[test]
    fn a_tag_is_reported_once_per_image() {
        let mut kit = Kit::new();
        kit.release_to_pause("a", template_unpinned("registry/app:2", "c1"));
        kit.advance(5);
        kit.new_revision("b", template_unpinned("registry/app:2", "c2"));
        let f: Vec<_> = kit
            .found
            .iter()
            .filter(|f| f.rule == Rule::ImageNotPinned)
            .collect();
        assert_eq!(f.len(), 1, "{:#?}", kit.found);
        assert!(f[0].summary.contains("registry/app:2"));
    }

    #[test]
    fn a_digest_is_fine() {
        let mut kit = Kit::new();
        kit.release_to_pause("a", template("registry/app:2", "c1"));
        let report = kit.finish();
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule != Rule::ImageNotPinned)
        );
    }

    #[test]
    fn pinned_detection() {
        assert!(super::pinned("r/app:1@sha256:abc"));
        assert!(super::pinned("r/app@sha256:abc"));
        assert!(!super::pinned("r/app:1"));
        assert!(!super::pinned("app"));
    }
}
