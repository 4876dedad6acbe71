import { runService } from '@cairn/runtime';
import { verifierService } from './service.js';

runService(verifierService());
