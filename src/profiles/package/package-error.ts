/** A package that cannot be loaded: the message names the package file and the entry at fault. */
export class PackageError extends Error {}
