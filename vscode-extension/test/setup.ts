/** Mocha --require hook: `require('vscode')` resolves to the stand-in in test/stubs. */
import * as path from 'path';

const Module = require('module');
const stubPath = path.join(__dirname, 'stubs', 'vscode.js');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request: string, ...rest: unknown[]) {
  if (request === 'vscode') {
    return stubPath;
  }
  return resolve.call(this, request, ...rest);
};
