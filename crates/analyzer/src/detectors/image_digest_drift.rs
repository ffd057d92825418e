//! `image-digest-drift` (error): one image reference ran as different digests in the rollout's pods
//! (a moved tag).
//!
//! # What it detects
//! One image reference (the same `image` string in the pod spec, not pinned by digest) ran as
//! different digests (`status.containerStatuses[].imageID`) in the pods of a rollout: within
//! one revision, or across revisions. Reported once per rollout, image and new digest.
//! What is remembered per rollout is every image a pod of it runs and the last 32 images it
//! ran: an image out of use since before those (more releases ago than a rollback reaches) is
//! looked at afresh if it comes back.
//! For a plain Deployment (one no rollout's `workloadRef` names) the same, among the pods of
//! its ReplicaSets: within one ReplicaSet, or across two.
//!
//! # Why it matters
//! The tag moved: the canary verified one build and other pods run another. Within one revision
//! the rollout's pods are no longer identical; across revisions a "config-only" restart or a
//! rollback silently shipped new code.
//!
//! # Example
//! `checkout-api:1.42.0` ran as `sha256:9f2c…` in `checkout-api-5d98c7bf64-x7k2p` (the canary)
//! and as `sha256:41aa…` in `checkout-api-5d98c7bf64-q8w3z`, created after promotion.
//!
//! # Remedy
//! Decide which build should run, pin it, roll out again; make release tags immutable.

use crate::base::HashMap;

use rf_format::{Kind, Timestamp};

use crate::detectors::image_not_pinned::pinned;
use crate::detectors::{DeploymentScene, Detector, Facts, RecentImages, Scene};
use crate::report::finding::{Evidence, Finding, Rule, Subject};
use crate::base::At;
use crate::model::traffic::{foreign, revision};
use crate::model::world::{Touched};

/// The first pod seen with a digest.
#[derive(Debug, Clone)]
struct Seen {
    digest: Box<str>,
    pod: Box<str>,
    revision: Box<str>,
    pos: At,
}

/// What is known of one image reference of one rollout. Kept while the rollout runs the image
/// and for [`KEEP_IMAGES`](crate::detectors::KEEP_IMAGES) images after (a rollback can bring it
/// back), and kept small: most images run as one digest.
#[derive(Debug, Default)]
struct ImageDigests {
    /// The digests seen first, at most [`KEEP_DIGESTS`], sorted by digest.
    seen: Vec<Seen>,
    /// Digests reported beyond those (a tag moved more often than that).
    reported_beyond: Vec<Box<str>>,
}


/// The command that lists the pods of revision `hash` with the digest each pulled.
fn digests_command(ns: &str, hash: &str) -> String {
    format!(
        "kubectl -n {ns} get pods -l rollouts-pod-template-hash={hash} -o jsonpath='{{range .items[*]}}{{.metadata.name}}{{\"\\t\"}}{{.status.containerStatuses[*].imageID}}{{\"\\n\"}}{{end}}'"
    )
}

/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn crate::detectors::Detector> {
    Box::new(ImageDigestDrift::default())
}

#[derive(Debug, Default)]
pub(crate) struct ImageDigestDrift {
    /// namespace -> rollout -> image -> digests. Nested so that a pod's own `&str`s look them
    /// up (this runs for every pod change): a key is copied only for a new image. The images
    /// of a rollout are the ones it ran most recently ([`RecentImages`]).
    digests: HashMap<String, HashMap<String, RecentImages<ImageDigests>>>,
    /// The same for plain Deployments, by (namespace, name); a revision is a ReplicaSet name.
    deployment_digests: HashMap<(String, String), RecentImages<ImageDigests>>,
    /// Experiment ReplicaSets and images reported (the latest [`KEEP_IMAGES`](crate::detectors::KEEP_IMAGES)).
    experiments: Vec<Box<str>>,
}

/// Digests remembered per image; a tag that moved more often than this is reported anyway.
const KEEP_DIGESTS: usize = 8;

fn short(d: &str) -> &str {
    d.get(..19).unwrap_or(d)
}

impl Detector for ImageDigestDrift {
    fn on_deployment(&mut self, d: &DeploymentScene<'_>, out: &mut Vec<Finding>) {
        let Some((name, pod)) = d.pod else {
            return;
        };
        let Some(rs) = pod.owner.as_deref() else {
            return;
        };
        let dep = d.dep;
        let in_use = |image: &str| {
            crate::model::rollout::template_images_text(dep.template.as_deref().unwrap_or("{}"))
                .iter()
                .any(|i| i == image)
        };
        for img in &pod.images {
            let Some(digest) = &img.digest else { continue };
            if pinned(&img.image) {
                continue;
            }
            let by_image = self
                .deployment_digests
                .entry((dep.namespace.clone(), dep.name.clone()))
                .or_default();
            let (known, _) = by_image.touch(&img.image, in_use);
            if known.seen.iter().any(|v| *v.digest == **digest)
                || known.reported_beyond.iter().any(|v| **v == **digest)
            {
                continue;
            }
            let first = known.seen.iter().min_by_key(|v| (v.pos.file, v.pos.seq)).cloned();
            if known.seen.len() < KEEP_DIGESTS {
                known.seen.push(Seen {
                    digest: digest.as_str().into(),
                    pod: name.into(),
                    revision: rs.into(),
                    pos: pod.pos,
                });
            } else {
                known.reported_beyond.push(digest.as_str().into());
            }
            let Some(first) = first else { continue };
            let scope = if *first.revision == *rs {
                format!("within ReplicaSet {rs}")
            } else {
                format!("across ReplicaSets {} and {rs}", first.revision)
            };
            let ns = &dep.namespace;
            out.push(
                Finding::new(
                    Rule::ImageDigestDrift,
                    d.subject(),
                    d.subject(),
                    pod.pos.at,
                    format!(
                        "image {} ran as two digests {scope}: {} in {} and {} in {name}",
                        img.image,
                        short(&first.digest),
                        first.pod,
                        short(digest)
                    ),
                )
                .explain(format!(
                    "The tag of {} was moved while Deployment {} ran: pod {} pulled {}, pod {name} pulled {digest}. Its pods are not one build, and `kubectl rollout undo` to this template would pull whatever the tag points to now.",
                    img.image, dep.name, first.pod, first.digest
                ))
                .with_evidence([
                    Evidence::of(first.pos, Subject::new(Kind::Pod, ns, &first.pod), format!("container runs {}", first.digest)),
                    Evidence::of(pod.pos, Subject::new(Kind::Pod, ns, name), format!("container {} runs {digest}", img.container)),
                ])
                .remedy(
                    "Decide which build should run, pin it by digest in the manifest, and roll out again; until then treat the release as unverified.".to_owned(),
                    vec![
                        format!(
                            "kubectl -n {ns} get pods -o custom-columns=POD:.metadata.name,REPLICASET:.metadata.ownerReferences[0].name,IMAGE_ID:.status.containerStatuses[*].imageID"
                        ),
                        format!("kubectl -n {ns} rollout history deployment/{}", dep.name),
                    ],
                    "Deploy by digest (repo:tag@sha256:...) and make release tags immutable in the registry.".to_owned(),
                ),
            );
        }
    }

    /// `image-not-pinned`'s findings say which digest to pin: the one a pod pulled first, as
    /// remembered here, or that no pod pulled the tag.
    fn amender(&self) -> Option<crate::report::end::Amender> {
        let mut pulled: HashMap<String, HashMap<String, crate::detectors::image_not_pinned::Pulled>> =
            HashMap::default();
        let mut note = |ns: &str, owner: String, images: &RecentImages<ImageDigests>| {
            let by_image = pulled.entry(ns.to_owned()).or_default().entry(owner).or_default();
            for (image, known) in images.iter() {
                if let Some(first) = known.seen.iter().min_by_key(|v| (v.pos.file, v.pos.seq)) {
                    by_image.insert(image.to_owned(), (first.digest.to_string(), first.pod.to_string()));
                }
            }
        };
        for (ns, rollouts) in &self.digests {
            for (rollout, images) in rollouts {
                note(ns, rollout.clone(), images);
            }
        }
        for ((ns, name), images) in &self.deployment_digests {
            note(ns, crate::detectors::deployment_key(name), images);
        }
        let pulled = std::sync::Arc::new(pulled);
        Some(std::sync::Arc::new(move |f: &mut Finding| {
            crate::detectors::image_not_pinned::amend(&pulled, f);
        }))
    }

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
        if foreign(track, pod) {
            self.experiment_pod(s, name, pod, out);
            return None;
        }
        let revision = revision(track, name, Some(pod))?;
        for img in &pod.images {
            let Some(digest) = &img.digest else { continue };
            if pinned(&img.image) {
                continue;
            }
            let by_rollout = match self.digests.get_mut(track.namespace()) {
                Some(m) => m,
                None => self.digests.entry(track.namespace().to_owned()).or_default(),
            };
            let by_image = match by_rollout.get_mut(track.name()) {
                Some(m) => m,
                None => by_rollout.entry(track.name().to_owned()).or_default(),
            };
            let in_use = |image: &str| {
                let hashes = track
                    .replicasets()
                    .values()
                    .filter_map(|rs| rs.hash.as_deref());
                hashes
                    .flat_map(|h| s.world.pods_of_hash(track.namespace(), h))
                    .any(|(_, p)| {
                        !foreign(track, p) && p.images.iter().any(|i| i.image == image)
                    })
            };
            let (known, _) = by_image.touch(&img.image, in_use);
            let slot = match known
                .seen
                .binary_search_by(|v| v.digest.as_ref().cmp(digest.as_str()))
            {
                Ok(_) => continue,
                Err(slot) => slot,
            };
            // The earliest seen, the first of equals by digest.
            let first = known
                .seen
                .iter()
                .min_by_key(|v| (v.pos.file, v.pos.seq))
                .cloned();
            let kept = known.seen.len() < KEEP_DIGESTS;
            if kept {
                known.seen.reserve_exact(1);
                known.seen.insert(
                    slot,
                    Seen {
                        digest: digest.as_str().into(),
                        pod: name.as_str().into(),
                        revision: revision.into(),
                        pos: pod.pos,
                    },
                );
            }
            let Some(first) = first else { continue };
            let other_digest = known
                .seen
                .iter()
                .find(|v| v.pod == first.pod && v.pos == first.pos)
                .map(|v| v.digest.to_string())
                .unwrap_or_default();
            // A digest kept above is never new again; one beyond them is reported once.
            if !kept {
                if known.reported_beyond.iter().any(|d| **d == **digest) {
                    continue;
                }
                known.reported_beyond.push(digest.as_str().into());
            }
            let scope = if *first.revision == *revision {
                format!("within revision {revision}")
            } else {
                format!("across revisions {} and {revision}", first.revision)
            };
            let ns = track.namespace();
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
                    vec![digests_command(ns, revision)],
                    "Deploy by digest (repo:tag@sha256:...) and make release tags immutable in the registry.".to_owned(),
                ),
            );
        }
        None
    }
}

impl ImageDigestDrift {
    /// A pod of an Experiment that runs a revision's template (its hash label names the
    /// revision, its ReplicaSet is the Experiment's): a build other than the one the revision's
    /// own pods pulled under the same tag means the experiment compared two builds.
    fn experiment_pod(
        &mut self,
        s: &Scene<'_>,
        name: &str,
        pod: &crate::model::world::PodObj,
        out: &mut Vec<Finding>,
    ) {
        let track = s.track;
        let (Some(hash), Some(owner)) = (pod.hash.as_deref(), pod.owner.as_deref()) else {
            return;
        };
        let Some(by_image) = self
            .digests
            .get_mut(track.namespace())
            .and_then(|m| m.get_mut(track.name()))
        else {
            return;
        };
        for img in &pod.images {
            let Some(digest) = &img.digest else { continue };
            if pinned(&img.image) {
                continue;
            }
            let (known, new) = by_image.touch(&img.image, |_| true);
            if new {
                continue;
            }
            let Some(own) = known
                .seen
                .iter()
                .find(|v| *v.revision == *hash && *v.digest != **digest)
                .cloned()
            else {
                continue;
            };
            if known.seen.iter().any(|v| *v.revision == *hash && *v.digest == **digest) {
                continue;
            }
            let key: Box<str> = format!("{owner}\u{0}{}", img.image).into();
            if self.experiments.contains(&key) {
                continue;
            }
            if self.experiments.len() >= crate::detectors::KEEP_IMAGES {
                self.experiments.remove(0);
            }
            self.experiments.push(key);
            let ns = track.namespace();
            out.push(
                Finding::new(
                    Rule::ImageDigestDrift,
                    track.subject(),
                    track.subject(),
                    pod.pos.at,
                    format!(
                        "the Experiment's {owner} ran {} as {}, the revision {hash} it stands for as {}: the experiment compared two builds",
                        img.image,
                        short(digest),
                        short(&own.digest)
                    ),
                )
                .explain(format!(
                    "Pod {name} of the Experiment's ReplicaSet {owner} runs revision {hash}'s template and pulled {} as {digest}; the revision's own pod {} pulled it as {}. The tag moved between the two pulls: whatever the experiment measured, it compared builds, not only the revisions it was meant to.",
                    img.image, own.pod, own.digest
                ))
                .with_evidence([
                    Evidence::of(own.pos, Subject::new(Kind::Pod, ns, &own.pod), format!("container runs {}", own.digest)),
                    Evidence::of(pod.pos, Subject::new(Kind::Pod, ns, name), format!("container {} runs {digest}", img.container)),
                ])
                .remedy(
                    "Do not act on the experiment's result: run it again with the images pinned by digest.".to_owned(),
                    vec![digests_command(ns, hash)],
                    "Deploy by digest (repo:tag@sha256:...) and make release tags immutable in the registry.".to_owned(),
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Rule;
    use crate::detectors::KEEP_IMAGES;
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

    /// An Experiment's pods carry the revision's hash label (the controller hashes the same
    /// template): they are not the revision's, and their build says nothing of it.
    #[test]
    fn issue_28_experiment_pods_sharing_the_hash_label_are_not_the_revisions_issue_48_but_their_build_is_compared() {
        let mut kit = Kit::new();
        kit.release_to_pause("a", template_unpinned("r/app:2", "c1"));
        kit.pod("a", "p0", true, "r/app:2", &digest("build-1"));
        kit.experiment_pod("checkout-api-a-2-1-baseline", "a", "r/app:2", &digest("build-2"));
        kit.advance(60);
        kit.pod("a", "p1", true, "r/app:2", &digest("build-1"));
        let report = kit.finish();
        // Not a drift within the revision: the experiment ran another build than it.
        let found = drift(&report);
        assert_eq!(found.len(), 1, "{:#?}", report.findings);
        assert!(
            found[0].summary.starts_with("the Experiment's checkout-api-a-2-1-baseline ran r/app:2 as")
                && found[0].summary.ends_with("the experiment compared two builds"),
            "{}",
            found[0].summary
        );

        // The same build in the experiment: nothing.
        let mut kit = Kit::new();
        kit.release_to_pause("a", template_unpinned("r/app:2", "c1"));
        kit.pod("a", "p0", true, "r/app:2", &digest("build-1"));
        kit.experiment_pod("checkout-api-a-2-1-baseline", "a", "r/app:2", &digest("build-1"));
        assert!(drift(&kit.finish()).is_empty());

        // The same pod of the revision's own ReplicaSet is the moved tag.
        let mut kit = Kit::new();
        kit.release_to_pause("a", template_unpinned("r/app:2", "c1"));
        kit.pod("a", "p0", true, "r/app:2", &digest("build-1"));
        kit.pod("a", "x1", true, "r/app:2", &digest("build-2"));
        assert_eq!(drift(&kit.finish()).len(), 1);
    }

    /// Pods met before their ReplicaSet (a kubectl import orders the ReplicaSet's status write
    /// after them): looked at when it arrives.
    #[test]
    fn issue_28_pods_recorded_before_their_replicaset_are_judged_when_it_arrives() {
        let mut kit = Kit::new();
        kit.pod("a", "p1", true, "r/app:2", &digest("build-1"));
        kit.pod("a", "p2", true, "r/app:2", &digest("build-2"));
        kit.advance(5);
        kit.release_to_pause("a", template_unpinned("r/app:2", "c1"));
        let report = kit.finish();
        let f = drift(&report);
        assert_eq!(f.len(), 1, "{:#?}", report.findings);
        assert!(f[0].summary.contains("within revision a"), "{}", f[0].summary);
    }

    /// `releases`, each a new tag with one pod, while the first release's pod still runs (or
    /// was deleted at once); then a pod of the first release pulls a moved tag.
    fn releases_then_the_first_tag_moves(releases: usize, running: bool) -> usize {
        let mut kit = Kit::new();
        kit.release_to_pause("h0", template_unpinned("r/app:0", "c0"));
        kit.pod("h0", "s", true, "r/app:0", &digest("b0"));
        if !running {
            kit.delete_pod("h0", "s");
        }
        for i in 1..releases {
            let image = format!("r/app:{i}");
            kit.release_to_pause(
                &format!("h{i}"),
                template_unpinned(&image, &format!("c{i}")),
            );
            kit.pod(
                &format!("h{i}"),
                "p",
                true,
                &image,
                &digest(&format!("b{i}")),
            );
        }
        kit.pod("h0", "late", true, "r/app:0", &digest("moved"));
        drift(&kit.finish()).len()
    }

    #[test]
    fn a_running_image_is_remembered_through_many_releases_and_one_left_long_ago_is_not() {
        let (few, many) = (KEEP_IMAGES / 2, 3 * KEEP_IMAGES);
        assert_eq!(releases_then_the_first_tag_moves(many, true), 1);
        assert_eq!(releases_then_the_first_tag_moves(few, false), 1);
        assert_eq!(releases_then_the_first_tag_moves(many, false), 0);
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
