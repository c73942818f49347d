throw new Error('isomorphic-webcrypto is not installed: fhirclient is used from Node only');
