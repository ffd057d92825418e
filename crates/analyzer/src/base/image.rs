//! Image references as the kubelet reports them.

/// The digest an `imageID` names (`docker-pullable://repo@sha256:...`, `repo@sha256:...`, or a
/// bare `sha256:...`), when it names one: the build a container runs, whatever its tag said.
pub fn image_digest(image_id: &str) -> Option<&str> {
    let d = image_id.rsplit('@').next().unwrap_or(image_id);
    let d = d.strip_prefix("docker://").unwrap_or(d);
    d.starts_with("sha256:").then_some(d)
}

#[cfg(test)]
mod tests {
    use super::image_digest;

    #[test]
    fn the_digest_of_each_imageid_form() {
        let d = "sha256:9f2c1b7e";
        assert_eq!(
            image_digest("docker-pullable://nginx@sha256:9f2c1b7e"),
            Some(d)
        );
        assert_eq!(
            image_digest("docker.io/library/nginx@sha256:9f2c1b7e"),
            Some(d)
        );
        assert_eq!(image_digest("docker://sha256:9f2c1b7e"), Some(d));
        assert_eq!(image_digest("sha256:9f2c1b7e"), Some(d));
        assert_eq!(image_digest(""), None);
        assert_eq!(image_digest("nginx:1.25"), None);
    }
}
