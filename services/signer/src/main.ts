import { runService } from '@cairn/runtime';
import { signerService } from './service.js';

runService(signerService());
