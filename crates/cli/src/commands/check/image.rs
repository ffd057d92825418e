//! `check --expect-image REF@sha256:DIGEST`: which build the current revision's ready pods run,
//! read from each container's `imageID` (the digest the kubelet pulled), not from the tag.

use anyhow::{Result, bail};
use serde::Serialize;
use serde_json::Value;

/// An image reference pinned to the digest the revision must run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct ExpectImage {
    /// As given.
    pub reference: String,
    /// The repository, normalised as the container runtime names it
    /// (`nginx` → `docker.io/library/nginx`).
    pub repository: String,
    /// `sha256:...`.
    pub digest: String,
}

/// Parses `REF@sha256:HEX` (a tag before the digest is allowed and ignored).
pub(super) fn parse_expect_image(s: &str) -> Result<ExpectImage> {
    let bad = |why: &str| {
        anyhow::anyhow!(
            "invalid --expect-image {s:?}: {why}; expected REF@sha256:DIGEST, e.g. registry.example.com/shop/checkout@sha256:9f2c… (the digest `crane digest` or `docker buildx imagetools inspect` prints)"
        )
    };
    let Some((name, digest)) = s.rsplit_once('@') else {
        return Err(bad("no digest"));
    };
    let Some(hex) = digest.strip_prefix("sha256:") else {
        return Err(bad("the digest is not sha256:"));
    };
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad("a sha256 digest is 64 hexadecimal digits"));
    }
    let Some(repository) = repository(name) else {
        return Err(bad("no repository before the digest"));
    };
    Ok(ExpectImage {
        reference: s.to_owned(),
        repository,
        digest: format!("sha256:{}", hex.to_ascii_lowercase()),
    })
}

/// The repository of an image reference, tag and digest removed, with the registry and the
/// `library/` path Docker Hub implies: `nginx:1.25` → `docker.io/library/nginx`.
pub(super) fn repository(reference: &str) -> Option<String> {
    let name = reference.split('@').next().unwrap_or(reference);
    // A tag follows the last `:` after the last `/` (a `:` before it is a registry's port).
    let name = match name.rfind(':') {
        Some(i) if !name[i..].contains('/') => &name[..i],
        _ => name,
    };
    if name.is_empty() {
        return None;
    }
    let (domain, path) = match name.split_once('/') {
        Some((d, p)) if d.contains('.') || d.contains(':') || d == "localhost" => (d, p.to_owned()),
        Some(_) => ("docker.io", name.to_owned()),
        None => ("docker.io", format!("library/{name}")),
    };
    let domain = if domain == "index.docker.io" {
        "docker.io"
    } else {
        domain
    };
    Some(format!("{domain}/{path}"))
}

/// What one ready pod of the current revision runs of the expected repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct PodImage {
    pub pod: String,
    /// The container running the repository; none when no container does.
    pub container: Option<String>,
    /// The digest from its `imageID`; none before the image is pulled.
    pub digest: Option<String>,
    pub matches: bool,
}

/// What `pod` runs of `expect.repository`: its first container (init containers aside) whose
/// image is of that repository.
pub(super) fn pod_image(pod: &Value, expect: &ExpectImage) -> PodImage {
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let statuses = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let spec_image = |container: &str| {
        pod.pointer("/spec/containers")
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.get("name").and_then(Value::as_str) == Some(container))
            })
            .and_then(|c| c.get("image"))
            .and_then(Value::as_str)
    };
    for status in statuses {
        let container = status
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // The spec says what was asked for; the status's `image` is what the runtime reports
        // (sometimes only a digest), so the spec decides the repository when it has one.
        let image = spec_image(container)
            .or_else(|| status.get("image").and_then(Value::as_str))
            .unwrap_or_default();
        if repository(image).as_deref() != Some(expect.repository.as_str()) {
            continue;
        }
        let digest = status
            .get("imageID")
            .and_then(Value::as_str)
            .and_then(rf_analyzer::image_digest)
            .map(str::to_owned);
        return PodImage {
            pod: name,
            container: Some(container.to_owned()),
            matches: digest.as_deref() == Some(expect.digest.as_str()),
            digest,
        };
    }
    PodImage {
        pod: name,
        container: None,
        digest: None,
        matches: false,
    }
}

/// Why the pods do not all run the expected build, one line per pod that does not; `what`
/// names the revision (`the current revision 5d98c7bf64`).
pub(super) fn failures(what: &str, pods: &[PodImage], expect: &ExpectImage) -> Vec<String> {
    if pods.is_empty() {
        return vec![format!(
            "{what} has no ready pod: nothing shows it runs {}",
            expect.reference
        )];
    }
    pods.iter()
        .filter(|p| !p.matches)
        .map(|p| match (&p.container, &p.digest) {
            (None, _) => format!(
                "pod {} of {what} has no container of {}",
                p.pod, expect.repository
            ),
            (Some(c), None) => format!(
                "pod {} of {what}: container {c} reports no image digest (imageID) yet",
                p.pod
            ),
            (Some(c), Some(d)) => format!(
                "pod {} of {what}: container {c} runs {}@{d}, not {}",
                p.pod, expect.repository, expect.digest
            ),
        })
        .collect()
}

/// Checks `s` is a valid `--expect-image` before anything is listed.
pub(super) fn validate(s: Option<&str>) -> Result<Option<ExpectImage>> {
    match s {
        Some(s) if s.trim().is_empty() => bail!("--expect-image is empty"),
        Some(s) => parse_expect_image(s).map(Some),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const D1: &str = "sha256:9f2c000000000000000000000000000000000000000000000000000000000001";
    const D2: &str = "sha256:41aa000000000000000000000000000000000000000000000000000000000002";

    #[test]
    fn repositories_are_named_as_the_runtime_names_them() {
        for (reference, repo) in [
            ("nginx", "docker.io/library/nginx"),
            ("nginx:1.25", "docker.io/library/nginx"),
            ("library/nginx:1.25", "docker.io/library/nginx"),
            (
                "docker.io/library/nginx@sha256:ab",
                "docker.io/library/nginx",
            ),
            ("index.docker.io/shop/app:1", "docker.io/shop/app"),
            ("shop/app:1", "docker.io/shop/app"),
            (
                "registry.example.com:5000/shop/app:1.42.0",
                "registry.example.com:5000/shop/app",
            ),
            ("localhost/app", "localhost/app"),
            ("ghcr.io/org/app:v1@sha256:ab", "ghcr.io/org/app"),
        ] {
            assert_eq!(repository(reference).as_deref(), Some(repo), "{reference}");
        }
        assert_eq!(repository(""), None);
    }

    #[test]
    fn expect_image_needs_a_full_sha256_digest() {
        let e = parse_expect_image(&format!(
            "shop/app:1.42.0@{}",
            D1.to_uppercase().replace("SHA256", "sha256")
        ))
        .unwrap();
        assert_eq!(e.repository, "docker.io/shop/app");
        assert_eq!(e.digest, D1);
        for bad in [
            "shop/app:1.42.0",
            "shop/app@sha256:9f2c",
            "shop/app@md5:00",
            &format!("@{D1}"),
        ] {
            let err = parse_expect_image(bad).unwrap_err().to_string();
            assert!(err.contains("expected REF@sha256:DIGEST"), "{bad}: {err}");
        }
    }

    fn pod(name: &str, containers: &[(&str, &str, Option<&str>)]) -> Value {
        json!({
            "metadata": {"name": name},
            "spec": {"containers": containers.iter().map(|(c, image, _)| json!({"name": c, "image": image})).collect::<Vec<_>>()},
            "status": {"containerStatuses": containers.iter().map(|(c, image, id)| {
                let mut s = json!({"name": c, "image": image});
                if let Some(id) = id { s["imageID"] = json!(id); }
                s
            }).collect::<Vec<_>>()}
        })
    }

    #[test]
    fn each_pod_is_judged_by_the_container_of_the_repository() {
        let e = parse_expect_image(&format!("registry.example.com/shop/app:1.42.0@{D1}")).unwrap();
        let ok = pod(
            "a",
            &[
                (
                    "proxy",
                    "envoyproxy/envoy:v1",
                    Some(&format!("docker.io/envoyproxy/envoy@{D2}")),
                ),
                (
                    "app",
                    "registry.example.com/shop/app:1.42.0",
                    Some(&format!("registry.example.com/shop/app@{D1}")),
                ),
            ],
        );
        let moved = pod(
            "b",
            &[(
                "app",
                "registry.example.com/shop/app:1.42.0",
                Some(&format!(
                    "docker-pullable://registry.example.com/shop/app@{D2}"
                )),
            )],
        );
        let pulling = pod(
            "c",
            &[("app", "registry.example.com/shop/app:1.42.0", None)],
        );
        let other = pod(
            "d",
            &[(
                "app",
                "registry.example.com/shop/other:1",
                Some(&format!("x@{D1}")),
            )],
        );
        let pods: Vec<PodImage> = [&ok, &moved, &pulling, &other]
            .iter()
            .map(|p| pod_image(p, &e))
            .collect();
        assert!(pods[0].matches && pods[0].container.as_deref() == Some("app"));
        let f = failures("the current revision h2", &pods, &e);
        assert_eq!(
            f,
            vec![
                format!("pod b of the current revision h2: container app runs registry.example.com/shop/app@{D2}, not {D1}"),
                "pod c of the current revision h2: container app reports no image digest (imageID) yet".to_owned(),
                "pod d of the current revision h2 has no container of registry.example.com/shop/app".to_owned(),
            ]
        );
        assert_eq!(
            failures("the current revision h2", &[], &e),
            vec![format!(
                "the current revision h2 has no ready pod: nothing shows it runs registry.example.com/shop/app:1.42.0@{D1}"
            )]
        );
    }
}
