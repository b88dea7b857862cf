// Paths of the package and the repository, for tests that read files
// beside them. Tests run bundled from .test-out/, one level below the
// package, as test/ is.

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
export const repoDir = join(packageDir, "..", "..");
