//! `image-not-pinned` (warning): a container image referenced by tag, without `@sha256:`.
//!
//! # What it detects
//! A container or init container of the rollout's pod template names its image by tag (or by
//! nothing at all, meaning `latest`) without an `@sha256:` digest. Reported once per rollout and
//! image, when the template is first seen with it. An image the template dropped more than 32
//! images ago (more releases than a rollback reaches) is forgotten, and reported again if it
//! comes back.
//! The same for the pod template of a plain Deployment (one no rollout's `workloadRef` names).
//!
//! # Why it matters
//! A tag is a pointer that can move: the bytes verified in the canary are not necessarily the
//! bytes that the last pod of the rollout pulls, or that a rollback pulls tomorrow.
//! `image-digest-drift` reports when that happened.
//!
//! # Example
//! `registry.example.com/payments/checkout-api:1.42.0` in container `app` of
//! `payments/checkout-api`.
//!
//! # Remedy
//! Deploy by digest.
//!
//! # Before the sync
//! `lint` reads every container and init container image of a rendered Rollout, Deployment,
//! StatefulSet or DaemonSet.

use crate::base::HashMap;

use crate::detectors::{DeploymentScene, Detector, RecentImages, argo};
use crate::base::HASH_LABEL;
use crate::report::finding::{Finding, Rule};
use crate::model::rollout::Transition;


/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn crate::detectors::Detector> {
    Box::new(ImageNotPinned::default())
}

#[derive(Debug, Default)]
pub(crate) struct ImageNotPinned {
    /// The images reported, per rollout (namespace, name): its most recent ones
    /// ([`RecentImages`]), each seen again at every transition while the template has it.
    /// Looked up by reference: nothing is copied for an image already reported.
    fired: HashMap<String, HashMap<String, RecentImages<()>>>,
    /// The same for plain Deployments, by (namespace, name).
    fired_deployments: HashMap<(String, String), RecentImages<()>>,
}

/// Image -> (the digest a pod pulled, that pod).
pub(crate) type Pulled = HashMap<String, (String, String)>;


/// Says which digest to pin in `f` (a finding of this rule): the one a pod pulled, or that no
/// pod pulled the tag.
pub(crate) fn amend(pulled: &HashMap<String, HashMap<String, Pulled>>, f: &mut Finding) {
    if f.rule != Rule::ImageNotPinned {
        return;
    }
    let Some(image) = image_of(f).map(str::to_owned) else {
        return;
    };
    let owner = crate::detectors::workload_key(&f.rollout);
    let pulled = pulled
        .get(&f.rollout.namespace)
        .and_then(|m| m.get(&owner))
        .and_then(|p| p.get(&image));
    let repo = image
        .rsplit_once(':')
        .filter(|(_, tag)| !tag.contains('/'))
        .map_or(image.as_str(), |(r, _)| r);
    match pulled {
        Some((digest, pod)) => {
            f.remedy.summary = format!(
                "Pin the digest its pods pulled: {repo}@{digest} (pod {pod} pulled {image} as it), once you have checked it is the build you meant."
            );
        }
        None => {
            f.remedy.summary = format!(
                "No pod pulled {image} while it was recorded, so no digest of it is known here (the tag may not exist: see rollout-stopped). Resolve the tag in the registry, check it is the build you meant, and deploy that digest."
            );
            f.remedy.commands = vec![format!(
                "docker buildx imagetools inspect {}",
                crate::detectors::shell_quote(&image)
            )];
        }
    }
}

/// The image a finding of this rule is about, from its summary.
fn image_of(f: &Finding) -> Option<&str> {
    f.summary
        .strip_prefix("image ")?
        .strip_suffix(" is referenced by tag, not by digest")
}


/// True when `image` names a digest.
pub(crate) fn pinned(image: &str) -> bool {
    image.contains("@sha256:") || image.contains("@sha512:")
}

impl Detector for ImageNotPinned {
    fn on_world(
        &mut self,
        s: &crate::detectors::Scene<'_>,
        _facts: &mut crate::detectors::Facts,
        out: &mut Vec<Finding>,
    ) -> Option<rf_format::Timestamp> {
        // A workloadRef rollout's template is its Deployment's: read when it changes.
        if let Some(crate::model::world::Touched::Deployment { template: true, .. }) = s.touched {
            if let Some(cur) = s.track.last() {
                self.check_rollout(s.track, cur.pos, out);
            }
        }
        None
    }

    fn on_deployment(&mut self, d: &DeploymentScene<'_>, out: &mut Vec<Finding>) {
        let dep = d.dep;
        let Some(template) = dep.template.as_deref().filter(|_| d.pod.is_none()) else {
            return;
        };
        let images = crate::model::rollout::template_images_text(template);
        let key = (dep.namespace.clone(), dep.name.clone());
        for image in images.iter().filter(|i| !pinned(i)) {
            let fired = self.fired_deployments.entry(key.clone()).or_default();
            if !fired.touch(image, |i| images.iter().any(|t| t == i)).1 {
                continue;
            }
            let (ns, name) = (&dep.namespace, &dep.name);
            out.push(
                Finding::new(
                    Rule::ImageNotPinned,
                    d.subject(),
                    d.subject(),
                    dep.pos.at,
                    format!("image {image} is referenced by tag, not by digest"),
                )
                .explain(format!(
                    "Deployment {name}'s pod template runs {image}. A tag can be moved to other bytes at any time: pods created later (a scale-up, a restart, `kubectl rollout undo`) can run an image nobody verified."
                ))
                .with_evidence([d.evidence(format!("pod template image {image}"))])
                .remedy(
                    "Find the digest the running pods use and pin it.".to_owned(),
                    vec![
                        format!(
                            "kubectl -n {ns} get pods -o custom-columns=POD:.metadata.name,REPLICASET:.metadata.ownerReferences[0].name,IMAGE_ID:.status.containerStatuses[*].imageID"
                        ),
                        format!("kubectl -n {ns} rollout history deployment/{name}"),
                    ],
                    "Deploy images as repo:tag@sha256:<digest> (an image updater or CI can write the digest), so what was verified is what runs.".to_owned(),
                ),
            );
        }
    }

    fn on_transition(&mut self, t: &Transition<'_>, out: &mut Vec<Finding>) {
        self.check_rollout(t.track, t.cur.pos, out);
    }
}

impl ImageNotPinned {
    /// Reports each image of the rollout's template that is not pinned, once.
    fn check_rollout(
        &mut self,
        track: &crate::model::rollout::RolloutTrack,
        pos: crate::base::At,
        out: &mut Vec<Finding>,
    ) {
        for image in track.images().iter().filter(|i| !pinned(i)) {
            let by_name = match self.fired.get_mut(track.namespace()) {
                Some(m) => m,
                None => self.fired.entry(track.namespace().to_owned()).or_default(),
            };
            let images = match by_name.get_mut(track.name()) {
                Some(m) => m,
                None => by_name.entry(track.name().to_owned()).or_default(),
            };
            if !images
                .touch(image, |i| track.images().iter().any(|t| t == i))
                .1
            {
                continue;
            }
            // The pods of the revision that runs the image: its template's labels select
            // them (the hash is the controller's to compute, and at a spec change the status
            // still names the revision before); each pod says its revision and what it pulled.
            let labels = track.template_labels();
            let selector = if labels.is_empty() {
                HASH_LABEL.to_owned()
            } else {
                labels
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            out.push(
                Finding::new(
                    Rule::ImageNotPinned,
                    track.subject(),
                    track.subject(),
                    pos.at,
                    format!("image {image} is referenced by tag, not by digest"),
                )
                .explain(format!(
                    "The rollout's pod template runs {image}. A tag can be moved to other bytes at any time: pods created later (a scale-up, a restart, a rollback) can run an image nobody verified."
                ))
                .with_evidence([track.evidence(pos, format!("pod template image {image}"))])
                .remedy(
                    "Find the digest the running pods use and pin it.".to_owned(),
                    vec![
                        format!(
                            "kubectl -n {} get pods -l {} -o custom-columns=POD:.metadata.name,REVISION:.metadata.labels.{HASH_LABEL},IMAGE:.spec.containers[*].image,IMAGE_ID:.status.containerStatuses[*].imageID",
                            track.namespace(),
                            crate::detectors::shell_quote(&selector)
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
    fn issue_46_the_command_selects_the_pods_of_the_template_that_runs_the_image() {
        let mut kit = Kit::new();
        kit.release_to_pause("a", template_unpinned("registry/app:2", "c1"));
        let f: Vec<_> = kit
            .found
            .iter()
            .filter(|f| f.rule == Rule::ImageNotPinned)
            .collect();
        assert_eq!(f.len(), 1, "{:#?}", kit.found);
        // Not `-l rollouts-pod-template-hash=stable0`: the revision before, whose pods run
        // another image (or none, once scaled down).
        assert_eq!(
            f[0].remedy.commands[0],
            "kubectl -n payments get pods -l app=checkout-api -o custom-columns=POD:.metadata.name,REVISION:.metadata.labels.rollouts-pod-template-hash,IMAGE:.spec.containers[*].image,IMAGE_ID:.status.containerStatuses[*].imageID"
        );
        assert_eq!(crate::detectors::shell_quote("a=b c"), "'a=b c'");
        assert_eq!(crate::detectors::shell_quote("it's"), r"'it'\''s'");
    }

    /// The images reported, in order.
    fn reported(kit: &Kit) -> Vec<String> {
        kit.found
            .iter()
            .filter(|f| f.rule == Rule::ImageNotPinned)
            .map(|f| f.summary.clone())
            .collect()
    }

    #[test]
    fn what_is_remembered_does_not_grow_with_releases_and_a_sidecar_is_reported_once() {
        let releases = 3 * crate::detectors::KEEP_IMAGES;
        let with_sidecar = |tag: &str| {
            let mut tpl = template_unpinned(&format!("registry/app:{tag}"), tag);
            tpl["spec"]["containers"]
                .as_array_mut()
                .expect("containers")
                .push(serde_json::json!({"name": "proxy", "image": "registry/proxy:1"}));
            tpl
        };
        let mut kit = Kit::new();
        for i in 0..releases {
            kit.release_to_pause(&format!("h{i}"), with_sidecar(&i.to_string()));
        }
        let found = reported(&kit);
        let proxy = found
            .iter()
            .filter(|s| s.contains("registry/proxy:1"))
            .count();
        assert_eq!(proxy, 1, "{found:#?}");
        for i in 0..releases {
            let image = format!("image registry/app:{i} ");
            assert_eq!(
                found.iter().filter(|s| s.contains(&image)).count(),
                1,
                "{image}"
            );
        }
        assert_eq!(found.len(), releases + 1);
        // A tag of the last releases is still known; the first one, left long ago, is not.
        kit.release_to_pause("back1", with_sidecar(&(releases - 2).to_string()));
        assert_eq!(reported(&kit).len(), releases + 1);
        kit.release_to_pause("back0", with_sidecar("0"));
        let found = reported(&kit);
        assert_eq!(found.len(), releases + 2);
        assert!(
            found[releases + 1].contains("image registry/app:0 "),
            "{found:#?}"
        );
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

    #[test]
    fn issue_48_a_workload_ref_rollouts_template_is_read_from_its_deployment() {
        let mut kit = Kit::new();
        kit.workload_ref("never");
        let before = reported(&kit).len();
        // Only the Deployment changes: no rollout record follows.
        kit.advance(5);
        kit.deployment(0, 0, template_unpinned("registry/app:3", "c3"), "argocd-controller");
        let found = reported(&kit);
        assert_eq!(found.len(), before + 1, "{found:#?}");
        assert!(found.last().unwrap().contains("registry/app:3"), "{found:#?}");
    }

    #[test]
    fn issue_48_the_digest_to_pin_is_one_a_pod_pulled_or_none() {
        let mut kit = Kit::new();
        kit.release_to_pause("new1", template_unpinned("registry/app:2", "c1"));
        kit.pod("new1", "p0", true, "registry/app:2", &crate::testkit::digest("app:2"));
        kit.advance(5);
        kit.new_revision("new2", template_unpinned("registry/app:9", "c1"));
        let report = kit.finish();
        let remedy = |image: &str| {
            report
                .findings
                .iter()
                .find(|f| f.rule == Rule::ImageNotPinned && f.summary.contains(image))
                .map(|f| f.remedy.clone())
                .unwrap()
        };
        let pulled = remedy("registry/app:2 ");
        assert!(
            pulled
                .summary
                .contains(&format!("registry/app@{}", crate::testkit::digest("app:2"))),
            "{}",
            pulled.summary
        );
        let never = remedy("registry/app:9 ");
        assert!(never.summary.starts_with("No pod pulled registry/app:9"), "{}", never.summary);
        assert_eq!(never.commands, ["docker buildx imagetools inspect registry/app:9"]);
    }
}
