// The package's version, sent in the User-Agent (a test checks it against package.json).
export const VERSAO = '0.2.0';
